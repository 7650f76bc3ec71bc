package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/persist"
)

// levelCounter counts the log records of each level whose message starts with prefix.
type levelCounter struct {
	mu     sync.Mutex
	prefix string
	counts map[slog.Level]int
}

func (c *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *levelCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *levelCounter) WithGroup(string) slog.Handler            { return c }
func (c *levelCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, c.prefix) {
		c.mu.Lock()
		c.counts[r.Level]++
		c.mu.Unlock()
	}
	return nil
}

func (c *levelCounter) count(l slog.Level) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[l]
}

// docs/semantics.md "Persisted cache": a save that fails — a directory that cannot be written,
// a full disk, another user's directory, another process's lock — is said once at error
// level, with its reason, however many periods it keeps failing; Stats.Persist says it fails
// and since when; the reflector goes on; and the save that works again says so. Nothing is
// ever written outside the cache directory, a planted symbolic link included.
func TestFailedSavesAreSaidOnce(t *testing.T) {
	b := sharedReal(t)
	root := os.Geteuid() == 0

	for _, hostile := range []struct {
		name string
		// afterFirstSave: the directory turns hostile once a save has worked (the lock it takes
		// must exist); otherwise before the reflector starts.
		afterFirstSave bool
		// make turns dir hostile and returns what makes it writable again.
		make func(t *testing.T, dir string) (mend func())
	}{
		{"read-only", false, func(t *testing.T, dir string) func() {
			if root {
				// Root writes through mode bits: a read-only mount is what stops it.
				mountOrFail(t, "--bind", dir, dir)
				mountOrFail(t, "-o", "remount,bind,ro", dir, dir)
				return func() { unmount(t, dir) }
			}
			require.NoError(t, os.Chmod(dir, 0o500))
			return func() { require.NoError(t, os.Chmod(dir, 0o700)) }
		}},
		{"full", false, func(t *testing.T, dir string) func() {
			if !root {
				t.Skip("a full filesystem needs a mount (tmpfs), which only root may make")
			}
			mountOrFail(t, "-t", "tmpfs", "-o", "size=16k,mode=0700", "tmpfs", dir)
			return func() { unmount(t, dir) }
		}},
		{"another user's", false, func(t *testing.T, dir string) func() {
			if !root {
				// A directory of root's, as seen by anyone else.
				require.NoError(t, os.Chmod(dir, 0o500))
				return func() { require.NoError(t, os.Chmod(dir, 0o700)) }
			}
			require.NoError(t, os.Chown(dir, 65534, 65534))
			return func() { require.NoError(t, os.Chown(dir, 0, 0)) }
		}},
		{"locked by another process", true, func(t *testing.T, dir string) func() {
			// Another process holding the lock: a save of the same identity is under way
			// elsewhere. flock locks belong to an open file, so another open in this process
			// is another holder as far as the kernel is concerned.
			var lock string
			require.Eventually(t, func() bool {
				ms, _ := filepath.Glob(filepath.Join(dir, "*.snap.lock"))
				if len(ms) == 1 {
					lock = ms[0]
				}
				return lock != ""
			}, 10*time.Second, 10*time.Millisecond, "the first save leaves its lock file")
			f, err := os.OpenFile(lock, os.O_RDWR, 0)
			require.NoError(t, err)
			// A save of the reflector's own may hold it this very moment.
			require.Eventually(t, func() bool {
				return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
			}, 10*time.Second, time.Millisecond)
			return func() { f.Close() }
		}},
	} {
		t.Run(hostile.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			require.NoError(t, os.Mkdir(dir, 0o700))
			var mend func()
			if !hostile.afterFirstSave {
				mend = hostile.make(t, dir)
			}
			mended := false
			defer func() {
				if !mended && mend != nil {
					mend()
				}
			}()
			logs := &levelCounter{prefix: "persisting the store", counts: map[slog.Level]int{}}
			// 200 ConfigMaps of 1 KiB: a snapshot larger than the full filesystem.
			e := newEnv(t, b, configMaps, 0)
			for i := range 200 {
				require.NoError(t, b.Put(t.Context(), configMaps, e.ns, fmt.Sprintf("obj-%d", i), strings.Repeat("y", 1024)))
			}
			e.start(func(c *rewatch.Config) {
				c.Persist, c.PersistPeriod, c.Logger = persist.Dir(dir), 20*time.Millisecond, slog.New(logs)
			})
			r := e.r
			e.converged()
			write := func(tag string) {
				require.NoError(t, b.Put(t.Context(), configMaps, e.ns, "obj-0", tag+time.Now().String()))
			}
			if hostile.afterFirstSave {
				write("first")
				mend = hostile.make(t, dir)
			}

			// Each period tries again while the store has changed since the last save.
			for i := 0; ; i++ {
				write("while hostile")
				if p := r.Stats().Persist; p != nil && p.Failures >= 3 {
					break
				}
				require.Less(t, i, 500, "saves keep failing: %+v", r.Stats().Persist)
				time.Sleep(20 * time.Millisecond)
			}
			p := r.Stats().Persist
			assert.NotEmpty(t, p.LastError)
			assert.False(t, p.FailingSince.IsZero())
			assert.Contains(t, p.String(), "FAILING since")
			assert.Equal(t, 1, logs.count(slog.LevelError), "a failing save is said once at error level, whatever the number of failures (%d)", p.Failures)
			assert.True(t, r.HasSynced(), "the reflector goes on")

			mend()
			mended = true
			require.Eventually(t, func() bool {
				write("mended")
				p := r.Stats().Persist
				return p.Failures == 0 && p.Saves > 0
			}, 10*time.Second, 20*time.Millisecond, "a save works again once the directory is mended")
			assert.Equal(t, 1, logs.count(slog.LevelInfo), "the save that works again says so")
			assert.Equal(t, 1, logs.count(slog.LevelError))
			e.stop()
		})
	}
}

// unmount unmounts dir, trying again while a save that failed still holds a file open there.
func unmount(t *testing.T, dir string) {
	t.Helper()
	var out []byte
	require.Eventually(t, func() bool {
		var err error
		out, err = exec.Command("umount", dir).CombinedOutput()
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "umount %s: %s", dir, out)
}

func mountOrFail(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("mount", args...).CombinedOutput()
	require.NoError(t, err, "mount %v: %s", args, out)
}

// A symbolic link planted in the cache directory, where a save takes its lock, makes the save
// fail rather than create a file where the link points; the snapshot's own name planted as a
// link is refused at load, not followed.
func TestPlantedLinksAreNotFollowed(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 3)
	dir := filepath.Join(t.TempDir(), "cache")
	outside := t.TempDir()
	persisted := func(c *rewatch.Config) { c.Persist = persist.Dir(dir) }
	run := func() rewatch.Stats {
		e.start(persisted)
		e.converged()
		require.True(t, waitFor(30*time.Second, e.r.HasSynced))
		e.stop()
		return e.r.Stats()
	}

	// A first run saves, so the file names are known.
	run()
	snaps, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	snap := snaps[0]
	require.NoError(t, os.Remove(snap+".lock"))
	require.NoError(t, os.Symlink(filepath.Join(outside, "planted-lock"), snap+".lock"))
	e.write("moved")
	st := run()
	require.NotNil(t, st.Persist, "the stop's save ended")
	assert.NotZero(t, st.Persist.Failures, "a save under a planted lock link fails")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is created where a planted link points")

	// The snapshot itself replaced by a link to a file elsewhere: refused, not read.
	require.NoError(t, os.Remove(snap+".lock"))
	moved := filepath.Join(outside, "snapshot")
	require.NoError(t, os.Rename(snap, moved))
	require.NoError(t, os.Symlink(moved, snap))
	st = run()
	assert.Equal(t, rewatch.StartRefused, st.Start.Way)
	assert.Contains(t, st.Start.Refused, "is a symbolic link")
}
