//go:build !unix

package persist

import (
	"io/fs"
	"sync"
)

// lockFile, where there is no flock, excludes saves of the same identity within this process
// only; temporary files left by a crash are removed by the next save all the same, and a
// second process saving the same identity into the same directory may then fail its rename.
func lockFile(name string) (unlock func(), err error) {
	mu, _ := processLocks.LoadOrStore(name, &sync.Mutex{})
	if !mu.(*sync.Mutex).TryLock() {
		return nil, errLocked(name)
	}
	return mu.(*sync.Mutex).Unlock, nil
}

var processLocks sync.Map

type errLocked string

func (e errLocked) Error() string {
	return "another save of this snapshot is under way (" + string(e) + " is locked)"
}

func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
