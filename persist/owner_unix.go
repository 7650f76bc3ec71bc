//go:build unix

package persist

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid that owns fi.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

// noFollow makes an open refuse a symbolic link as its last element: a link planted in the
// cache directory must not make a save create or lock a file elsewhere, nor a load read one.
const noFollow = syscall.O_NOFOLLOW
