package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rewatch/rewatch/transitions"
)

// MaxLine bounds one journal line. A full-capture record of a huge list page can be large;
// anything past this is a corrupt or hostile file, not a journal.
const MaxLine = 64 << 20

// Reader reads a journal written by Writer.
type Reader struct {
	sc     *bufio.Scanner
	line   int
	Header Header
}

// NewReader reads and checks the header.
func NewReader(r io.Reader) (*Reader, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	jr := &Reader{sc: sc}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("journal: header: %w", err)
		}
		return nil, errors.New("journal: empty file, no header")
	}
	jr.line = 1
	if err := strictUnmarshal(sc.Bytes(), &jr.Header); err != nil {
		return nil, fmt.Errorf("journal: line 1: header: %w", err)
	}
	switch jr.Header.Format {
	case Format:
	case formatV2:
		if jr.Header.Config.RetryAfterSpread > 0 {
			return nil, fmt.Errorf("journal: line 1: format %q with retryAfterSpread %v spread every Retry-After, the first too, which no configuration of %q reproduces",
				formatV2, jr.Header.Config.RetryAfterSpread, Format)
		}
		jr.Header.Config.RetryAfterSpread = transitions.RetryAfterExact
		jr.Header.Config.PageRelists = true
	default:
		return nil, fmt.Errorf("journal: line 1: format %q, want %q (or %q)", jr.Header.Format, Format, formatV2)
	}
	if jr.Header.Config.WatchSilence == 0 {
		// Written before watches had a silence bound (every writer records the effective
		// value, never 0): the commands it recorded carry none.
		jr.Header.Config.WatchSilence = -1
	}
	if jr.Header.Config.ActiveWatchSilence == 0 {
		// Written before a watch's silence followed its cadence: no deadline was armed.
		jr.Header.Config.ActiveWatchSilence = -1
	}
	return jr, nil
}

// Next returns the next record, or io.EOF after the last one. Blank lines are skipped.
func (r *Reader) Next() (Record, error) {
	for r.sc.Scan() {
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := strictUnmarshal(b, &rec); err != nil {
			return rec, fmt.Errorf("journal: line %d: %w", r.line, err)
		}
		if rec.Event.Kind == 0 {
			return rec, fmt.Errorf("journal: line %d: record without an event kind", r.line)
		}
		return rec, nil
	}
	if err := r.sc.Err(); err != nil {
		return Record{}, fmt.Errorf("journal: line %d: %w", r.line+1, err)
	}
	return Record{}, io.EOF
}

// Line is the number of the line Next read last.
func (r *Reader) Line() int { return r.line }

// strictUnmarshal rejects unknown fields, so a journal of another version or a stray file
// fails loudly instead of replaying as something else.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
