package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Step is one replayed record: what the journal says happened and what the machine does now.
type Step struct {
	Record   Record
	From, To fsm.State
	Cause    fsm.Cause
	Commands []fsm.Command
}

// Divergence is the first record whose replay differs from what was recorded.
type Divergence struct {
	Line   int
	Seq    uint64
	Field  string
	Want   string
	Got    string
	Record Record
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("journal: line %d (seq %d, %s): %s differs: recorded %s, replayed %s",
		d.Line, d.Seq, d.Record.Event, d.Field, d.Want, d.Got)
}

// ReplayOptions tune Replay.
type ReplayOptions struct {
	// Backoff replaces a backoff policy the journal could not record by value.
	Backoff backoff.Policy
	// Check compares every replayed transition and command with the recorded one and stops at
	// the first difference with a *Divergence.
	Check bool
	// OnStep sees every replayed step.
	OnStep func(Step)
}

// Replay folds the journal's events through a machine rebuilt from its header.
func Replay(r io.Reader, opts ReplayOptions) (fsm.Snapshot, error) {
	jr, err := NewReader(r)
	if err != nil {
		return fsm.Snapshot{}, err
	}
	cfg, err := jr.Header.Config.Policy(opts.Backoff)
	if err != nil {
		return fsm.Snapshot{}, err
	}
	m, err := transitions.New(cfg)
	if err != nil {
		return fsm.Snapshot{}, fmt.Errorf("journal: header config: %w", err)
	}
	s := m.Initial()
	var out []fsm.Command
	for {
		rec, err := jr.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		from := s.State
		e := rec.Event
		cause := m.Classify(&s, &e)
		out = m.Step(&s, &e, out[:0])
		step := Step{Record: rec, From: from, To: s.State, Cause: cause, Commands: out}
		if opts.Check {
			if d := compare(jr.Line(), rec, step); d != nil {
				return s, d
			}
		}
		if opts.OnStep != nil {
			opts.OnStep(step)
		}
	}
}

func compare(line int, rec Record, st Step) *Divergence {
	div := func(field, want, got string) *Divergence {
		return &Divergence{Line: line, Seq: rec.Seq, Field: field, Want: want, Got: got, Record: rec}
	}
	switch {
	case rec.From != st.From:
		return div("from", rec.From.String(), st.From.String())
	case rec.To != st.To:
		return div("to", rec.To.String(), st.To.String())
	case rec.Cause != st.Cause:
		return div("cause", rec.Cause.String(), st.Cause.String())
	}
	// Commands compare in their journal form: objects are not recorded, so they cannot count.
	want, _ := json.Marshal(rec.Commands)
	got, _ := json.Marshal(nilIfEmpty(st.Commands))
	if !bytes.Equal(want, got) {
		return div("commands", string(want), string(got))
	}
	return nil
}

func nilIfEmpty(c []fsm.Command) []fsm.Command {
	if len(c) == 0 {
		return nil
	}
	return c
}
