//go:build !unix || aix || solaris

package persist

import "sync"

// lockFile, where the syscall package has no flock, excludes saves of the same identity within
// this process only: temporary files left by a crash are removed by the next save all the same,
// and a second process saving the same identity into the same directory may have its
// temporary file removed, so that its save fails and the next one tries again.
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
