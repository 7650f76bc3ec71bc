package fsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/transitions"
)

// TestTranscripts replays the golden transcripts in testdata/transcripts: one file per
// docs/semantics.md row or rule, each a script of events, one directive per event, with the
// transition and commands it must produce right under it, as in etcd-io/raft's interaction
// tests. Rewrite them after a deliberate change with:
// go test ./fsm_test -run TestTranscripts -rewrite
//
// Directives:
//
//	config [KEY=VALUE | SWITCH]... [jitter=J] [backoff=zero]
//	       a new machine with this configuration, from its initial snapshot; the output is the
//	       configuration in force. Every transitions.Config tunable is a key, named as in
//	       transitions.Tunables (retry-after-cap=1m, max-relists=2, a bare watch-list for a
//	       switch; see parseConfig); jitter and backoff set the backoff policy
//	[+D] EVENT [FIELD=VALUE]...
//	       one event, in the words of the canonical printer (see scriptRunner), after the clock
//	       has moved on by D if given: start, list-page rv=100, +800ms timer-fired, watch-error
//	       status=429 retry-after-seconds=5, stop, …; the output is the event as the machine saw
//	       it, then the transition and each command, or "ignored"
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		var r *scriptRunner
		newRunner := func(cfg transitions.Config) { r = newScriptRunner(transitions.MustNew(cfg)) }
		newRunner(transcriptConfig(nil))
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Input != "" {
				d.Fatalf(t, "%s takes no input: write one event per directive", d.Cmd)
			}
			if d.Cmd == "config" {
				cfg, err := parseConfig(d.CmdArgs)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				newRunner(cfg)
				return fmt.Sprintf("%+v\n", summary(r.m.Config()))
			}
			// An event: the directive line as datadriven split it ("+800ms" is the command of
			// "+800ms timer-fired", and "timer-fired" its first argument), joined back up.
			words := []string{d.Cmd}
			for _, a := range d.CmdArgs {
				words = append(words, a.String())
			}
			out, err := r.runLine(strings.Join(words, " "))
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

// transcriptConfig is the default for transcripts: client-go's reflector backoff without jitter,
// so that the printed delays read as the schedule itself (800ms, 1.6s, 3.2s, …), and the
// silence rule's deadlines off (active-watch-silence=-1), so that a transcript about another
// rule shows that rule's commands alone; the silent_watch transcripts turn it on.
func transcriptConfig(mod func(*transitions.Config)) transitions.Config {
	b := backoff.Reflector()
	b.Jitter = 0
	cfg := transitions.Config{Backoff: b, Seed: 1, ActiveWatchSilence: -1}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

func transcriptMachine() *transitions.Machine { return transitions.MustNew(transcriptConfig(nil)) }

// parseConfig reads a transcript's `config` line. Every transitions.Config tunable is a key of
// its own (transitions.Tunables: retry-after-cap=1m, a bare watch-list for a switch); the
// backoff, a policy rather than a value, has jitter=J and backoff=zero.
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
		case "backoff":
			if v != "zero" {
				err = fmt.Errorf("backoff=%s: only backoff=zero (a policy that always says 0) is known", v)
			}
			cfg.Backoff = backoff.Backoff{}
		default:
			t, ok := transitions.LookupTunable(a.Key)
			switch {
			case !ok:
				err = fmt.Errorf("unknown config key %q", a.Key)
			case v == "" && t.IsBool():
				err = t.Set(&cfg, "true")
			default:
				err = t.Set(&cfg, v)
			}
		}
		if err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// summary prints the configuration in force: the backoff, then every tunable whose value is
// not the transcripts' default (the library's, the silence rule off), by its key — so adding a
// tunable changes no transcript.
func summary(c transitions.Config) string {
	parts := []string{fmt.Sprintf("backoff=%+v", c.Backoff)}
	def := transitions.Defaults()
	def.ActiveWatchSilence = transcriptConfig(nil).ActiveWatchSilence
	for _, t := range transitions.Tunables() {
		if v := t.Format(c); v != t.Format(def) {
			parts = append(parts, t.Key+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
