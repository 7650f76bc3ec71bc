package fsm_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain raises rapid's default from 100 to 1,000 sequences per property; an explicit
// -rapid.checks still wins.
func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	if !explicit {
		if err := flag.Set("rapid.checks", "1000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
