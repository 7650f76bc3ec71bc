package persist_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

// saveLoopEnv, set to a directory, makes the test binary a process that saves snapshots there
// in a loop until it is killed (see TestMain).
const saveLoopEnv = "REWATCH_PERSIST_SAVE_LOOP"

func TestMain(m *testing.M) {
	if dir := os.Getenv(saveLoopEnv); dir != "" {
		saveLoop(dir)
		os.Exit(3) // not reached: saveLoop runs until the process is killed
	}
	os.Exit(m.Run())
}

// generation is the snapshot a save loop writes at generation g: its resourceVersion is g and
// its items say g, so a loaded snapshot shows whether it is whole and of one generation.
func generation(g int) []any {
	n := 2000 + (g*37)%1000
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("generation %d item %d %s", g, i, strings.Repeat("p", 100+(i+g)%50))
	}
	return out
}

// saveLoop saves generation after generation, from the one after the snapshot it finds, and
// says "ready" once it has begun.
func saveLoop(dir string) {
	st := persist.Dir(dir)
	g := 1
	if snap, err := persist.Load(context.Background(), st, testID, textCodec{}); err == nil {
		last, _ := strconv.Atoi(snap.ResourceVersion)
		g = last + 1
	}
	fmt.Println("ready")
	for ; ; g++ {
		if _, err := persist.Save(context.Background(), st, testID, textCodec{}, strconv.Itoa(g), generation(g), time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "save:", err)
			os.Exit(2)
		}
	}
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.tmp-*"))
	require.NoError(t, err)
	return m
}

// A process killed (SIGKILL) at random points while it writes snapshots, over and over,
// leaves the last complete snapshot or none: never a torn one, never an older one than
// was already seen, and never more than the one temporary file of the write it was killed in,
// which the next save removes.
func TestKilledWhileSaving(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20261205, 33))
	last, midWrite := 0, 0
	const kills = 24
	for k := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), saveLoopEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err, "the save loop did not start: %s", stderr.String())
		require.Equal(t, "ready\n", line)
		// Most kills within 40 ms of the start: the first saves, before any completed, are the
		// ones that must leave none. The last few let it run longer, so that a slow machine
		// completes some all the same.
		window := 40 * time.Millisecond
		if k >= kills-4 {
			window = 400 * time.Millisecond
		}
		time.Sleep(time.Duration(rng.Int64N(int64(window))))
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err = cmd.Wait()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "kill %d: the loop ended by itself: %v: %s", k, err, stderr.String())
		require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "kill %d: %s", k, stderr.String())

		temps := tempFiles(t, dir)
		require.LessOrEqual(t, len(temps), 1, "kill %d: temporary files pile up: %v", k, temps)
		if len(temps) == 1 {
			midWrite++
		}
		snap, err := persist.Load(t.Context(), persist.Dir(dir), testID, textCodec{})
		if errors.Is(err, persist.ErrNotFound) {
			require.Zero(t, last, "kill %d: the snapshot of generation %d is gone", k, last)
			continue
		}
		require.NoError(t, err, "kill %d", k)
		g, err := strconv.Atoi(snap.ResourceVersion)
		require.NoError(t, err)
		require.GreaterOrEqual(t, g, last, "kill %d: an older snapshot came back", k)
		require.Equal(t, generation(g), snap.Items, "kill %d: generation %d is not whole", k, g)
		last = g
	}
	t.Logf("%d kills, %d of them with a snapshot being written; last generation %d", kills, midWrite, last)
	require.Positive(t, last, "no snapshot was ever completed")
	require.Positive(t, midWrite, "no kill landed during a write")

	// The next save removes the dead writer's temporary file.
	_, err := persist.Save(t.Context(), persist.Dir(dir), testID, textCodec{}, strconv.Itoa(last+1), generation(last+1), time.Now())
	require.NoError(t, err)
	require.Empty(t, tempFiles(t, dir))
}
