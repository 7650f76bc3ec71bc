package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
)

const replayExample = `  # Record a demo run, then check that the machine still makes the recorded decisions:
  rewatch demo --journal demo.journal
  rewatch replay --check demo.journal`

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		check, all bool
		output     string
	)
	fs := newFlagSet("replay", "[flags] FILE",
		"Feed a journal's events through a machine rebuilt from its header and print the transitions.\n"+
			"With --check, every replayed transition and command list must equal the recorded one; the\n"+
			"first difference is printed and the exit status is 1. Flags go before FILE.",
		replayExample, stdout)
	fs.BoolVar(&check, "check", false, "verify the replayed commands equal the recorded ones")
	fs.BoolVar(&all, "all", false, "print every record, including each watch event")
	fs.StringVar(&output, "output", "text", "output format: text or json (JSON lines)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := choice("output", output, "text", "json"); err != nil {
		return err
	}
	// Let flags follow the file too: "replay FILE --check" is what people type.
	rest := fs.Args()
	if len(rest) > 1 {
		if err := parse(fs, rest[1:]); err != nil {
			return err
		}
		rest = append(rest[:1], fs.Args()...)
	}
	if len(rest) != 1 {
		return usagef("want exactly one journal FILE, got %d arguments", len(rest))
	}
	f, err := os.Open(rest[0])
	if err != nil {
		return usageError{err}
	}
	defer f.Close()

	p := newPrinter(stdout, output)
	var first time.Time
	records, shownN := 0, 0
	// Without --check the replay goes on past a record the machine now decides otherwise, and
	// prints what it decides now; the reader must still learn that the story differs from the
	// run that wrote the journal (docs/journal.md, "Replay").
	differs, firstDiffer := 0, journal.Step{}
	_, err = journal.Replay(f, journal.ReplayOptions{Check: check, OnStep: func(s journal.Step) {
		records++
		if first.IsZero() {
			first = s.Record.Event.Now
		}
		if s.Record.Cause != fsm.NoCause && (s.Cause != s.Record.Cause || s.From != s.Record.From || s.To != s.Record.To) {
			if differs == 0 {
				firstDiffer = s
			}
			differs++
		}
		if !all && (s.Cause == fsm.NoCause || s.Cause == fsm.CauseWatchEvent || s.Cause == fsm.CauseInitialEvent) {
			return
		}
		shownN++
		p.replayStep(s, s.Record.Event.Now.Sub(first))
	}})
	var div *journal.Divergence
	if errors.As(err, &div) {
		p.divergence(div)
		return fmt.Errorf("journal diverges at line %d (seq %d): %s differs", div.Line, div.Seq, div.Field)
	}
	if err != nil {
		// A journal that does not parse is a bad input file, not a failed run.
		return usageError{err}
	}
	msg := fmt.Sprintf("replayed %d records (%d transitions shown)", records, shownN)
	if check {
		msg += "; check: every transition and command matches the recording"
	}
	fields := map[string]any{"records": records, "checked": check}
	if differs > 0 {
		r := firstDiffer.Record
		msg += fmt.Sprintf("; %d of them replayed otherwise than recorded, the first seq %d (recorded %s --%s--> %s, replayed %s --%s--> %s): "+
			"this machine does not make the recorded decisions, so what is shown from there on is not what the run did (--check stops at the first)",
			differs, r.Seq, r.From, r.Cause, r.To, firstDiffer.From, firstDiffer.Cause, firstDiffer.To)
		fields["differing"] = differs
	}
	p.note("replayed", msg, fields)
	return nil
}

func (p *printer) replayStep(s journal.Step, at time.Duration) {
	e := s.Record.Event
	wait, armed := waitOf(s.Commands)
	if p.json {
		m := map[string]any{"type": "transition", "seq": s.Record.Seq, "offsetSeconds": round3(at.Seconds()),
			"from": s.From.String(), "to": s.To.String(), "cause": s.Cause.String(), "event": e.Kind.String(),
			"resourceVersion": e.ResourceVersion, "commands": commandStrings(s.Commands)}
		if armed {
			m["waitSeconds"] = round3(wait.Seconds())
		}
		if e.Failure != nil {
			m["failure"] = e.Failure.String()
		}
		p.emitJSON(m)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%-5d %8.3fs  %-9s → %-9s  %-26s %s", s.Record.Seq, at.Seconds(), s.From, s.To, s.Cause, e)
	if armed {
		fmt.Fprintf(&b, "  wait=%s", wait.Round(time.Millisecond))
	}
	p.line(b.String())
}

func (p *printer) divergence(d *journal.Divergence) {
	if p.json {
		p.emitJSON(map[string]any{"type": "divergence", "line": d.Line, "seq": d.Seq, "event": d.Record.Event.String(),
			"field": d.Field, "recorded": d.Want, "replayed": d.Got})
		return
	}
	p.line(fmt.Sprintf("DIVERGENCE at line %d (seq %d, event %s): %s differs", d.Line, d.Seq, d.Record.Event, d.Field))
	p.line("  recorded: " + d.Want)
	p.line("  replayed: " + d.Got)
}

func commandStrings(cmds []fsm.Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.String()
	}
	return out
}
