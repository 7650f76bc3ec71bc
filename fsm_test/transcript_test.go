package fsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/transitions"
)

// TestTranscripts replays the golden transcripts in testdata/transcripts: one file per
// docs/semantics.md row or rule, each a script of events with the states and commands they must produce.
// Rewrite them after a deliberate change with: go test ./fsm_test -run TestTranscripts -rewrite
//
// Directives:
//
//	config [jitter=0] [backoff=zero] [watch-list] [internal-window=D] [internal-rewatches=N] [resume-rv-lifetime=D]
//	       [retry-after-cap=D] [page-size=N] [seed=N]
//	run    (input: one event per line; output: transition and commands per event)
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		var r *scriptRunner
		newRunner := func(cfg transitions.Config) { r = newScriptRunner(transitions.MustNew(cfg)) }
		newRunner(transcriptConfig(nil))
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				cfg, err := parseConfig(d.CmdArgs)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				newRunner(cfg)
				return fmt.Sprintf("%+v\n", summary(r.m.Config()))
			case "run":
				var b strings.Builder
				for _, line := range strings.Split(d.Input, "\n") {
					line = strings.TrimSpace(line)
					if line == "" || strings.HasPrefix(line, "#") {
						continue
					}
					out, err := r.runLine(line)
					if err != nil {
						d.Fatalf(t, "%s: %v", line, err)
					}
					b.WriteString(out)
				}
				return b.String()
			}
			d.Fatalf(t, "unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// transcriptConfig is the default for transcripts: client-go's reflector backoff without jitter,
// so that the printed delays read as the schedule itself (800ms, 1.6s, 3.2s, …).
func transcriptConfig(mod func(*transitions.Config)) transitions.Config {
	b := backoff.Reflector()
	b.Jitter = 0
	cfg := transitions.Config{Backoff: b, Seed: 1}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

func transcriptMachine() *transitions.Machine { return transitions.MustNew(transcriptConfig(nil)) }

func parseConfig(args []datadriven.CmdArg) (transitions.Config, error) {
	cfg := transcriptConfig(nil)
	for _, a := range args {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "jitter":
			var j float64
			j, err = strconv.ParseFloat(v, 64)
			b := cfg.Backoff.(backoff.Backoff)
			b.Jitter = j
			cfg.Backoff = b
		case "watch-list":
			cfg.WatchList = true
		case "internal-window":
			cfg.InternalErrorWindow, err = time.ParseDuration(v)
		case "internal-rewatches":
			cfg.InternalErrorRewatches, err = strconv.Atoi(v)
		case "resume-rv-lifetime":
			cfg.ResumeRVLifetime, err = time.ParseDuration(v)
		case "retry-after-cap":
			cfg.RetryAfterCap, err = time.ParseDuration(v)
		case "page-size":
			cfg.PageSize, err = strconv.ParseInt(v, 10, 64)
		case "backoff":
			if v != "zero" {
				err = fmt.Errorf("backoff=%s: only backoff=zero (a policy that always says 0) is known", v)
			}
			cfg.Backoff = backoff.Backoff{}
		case "seed":
			cfg.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			err = fmt.Errorf("unknown config key %q", a.Key)
		}
		if err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func summary(c transitions.Config) string {
	return fmt.Sprintf("backoff=%+v internal-window=%v internal-rewatches=%d resume-rv-lifetime=%v retry-after-cap=%v page-size=%d watch-list=%v",
		c.Backoff, c.InternalErrorWindow, c.InternalErrorRewatches, c.ResumeRVLifetime, c.RetryAfterCap, c.PageSize, c.WatchList)
}
