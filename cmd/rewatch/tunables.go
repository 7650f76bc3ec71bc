package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/transitions"
)

// tunables are the reflector settings both watch and demo expose as flags: one flag per field
// of the policy (transitions.Tunables, named after its journal key), and the backoff's first
// step and cap.
type tunables struct {
	policy         rewatch.Policy
	backoffInitial time.Duration
	backoffCap     time.Duration
}

// libraryDefaults are the defaults rewatch.New applies, so --help shows real numbers.
func libraryDefaults() tunables {
	return tunables{policy: transitions.Defaults(), backoffInitial: backoff.Reflector().Duration, backoffCap: backoff.Reflector().Cap}
}

func (t *tunables) register(fs *flag.FlagSet, d tunables) {
	*t = d
	for _, tun := range transitions.Tunables() {
		if !tun.CLI {
			continue
		}
		// Bound to the field itself, so --help names its type and shows its default.
		switch p := tun.Pointer(&t.policy).(type) {
		case *time.Duration:
			fs.DurationVar(p, tun.Key, *p, tun.Help)
		case *int:
			fs.IntVar(p, tun.Key, *p, tun.Help)
		case *int64:
			fs.Int64Var(p, tun.Key, *p, tun.Help)
		case *uint64:
			fs.Uint64Var(p, tun.Key, *p, tun.Help)
		case *float64:
			fs.Float64Var(p, tun.Key, *p, tun.Help)
		case *bool:
			fs.BoolVar(p, tun.Key, *p, tun.Help)
		default:
			panic(fmt.Sprintf("tunable %s has no flag kind for %T", tun.Key, p))
		}
	}
	fs.DurationVar(&t.backoffInitial, "backoff-initial", d.backoffInitial, "first backoff delay (doubles, jitter 1.0)")
	fs.DurationVar(&t.backoffCap, "backoff-cap", d.backoffCap, "largest backoff delay before jitter")
}

func (t tunables) validate() error {
	switch {
	case t.backoffInitial <= 0:
		return usagef("-backoff-initial must be positive, got %s", t.backoffInitial)
	case t.backoffCap < t.backoffInitial:
		return usagef("-backoff-cap (%s) is below -backoff-initial (%s)", t.backoffCap, t.backoffInitial)
	}
	if _, err := transitions.New(t.policy); err != nil {
		return usageError{err}
	}
	return nil
}

// apply sets every tunable but the seed, which the command sets itself.
func (t tunables) apply(cfg *rewatch.Config) {
	b := backoff.Reflector()
	b.Duration, b.Cap = t.backoffInitial, t.backoffCap
	// client-go's ceil(Cap/Duration): enough doublings to always reach the cap.
	b.Steps = int((t.backoffCap + t.backoffInitial - 1) / t.backoffInitial)
	seed := cfg.Seed
	cfg.Policy = t.policy
	cfg.Backoff, cfg.Seed = b, seed
}
