//go:build unix && !aix && !solaris

package persist

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on name (created 0600 if missing), without waiting: a
// save of the same identity under way elsewhere makes this one fail, to be tried again at the
// next period, rather than wait behind it. The kernel releases the lock when the process dies.
func lockFile(name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another save of this snapshot is under way (%s is locked)", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
