package soak

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rewatch/rewatch/internal/apiserver"
)

var (
	soakDuration = flag.Duration("soak.duration", envDuration("SOAK_DURATION", 60*time.Second),
		"chaos soak length on the real kube-apiserver; the simulator soak runs a third of it (env SOAK_DURATION)")
	downDuration = flag.Duration("soak.down", envDuration("SOAK_DOWN", 20*time.Second),
		"how long the server stays down / answers 403, 404 or Retry-After: 0 (env SOAK_DOWN)")
	soakSeed = flag.Uint64("soak.seed", 1, "seed of the fault schedule and the writers")
)

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}

func TestMain(m *testing.M) {
	apiserver.MainUnlessOptedIn("the soak tests (real kube-apiserver and etcd, and the simulator)")
	code := m.Run()
	printResults()
	shared.Stop()
	os.Exit(code)
}

var (
	resultsMu sync.Mutex
	results   []string
)

// recordResult adds a row to the table printed at the end (the source of docs/reliability.md).
func recordResult(scenario, backend, injected, result string) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, fmt.Sprintf("| %s | %s | %s | %s |", scenario, backend, injected, result))
}

func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	fmt.Println("\n| scenario | backend | injected | result |")
	fmt.Println("|---|---|---|---|")
	for _, r := range results {
		fmt.Println(r)
	}
}
