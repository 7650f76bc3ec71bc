package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// printer owns the command's output: transition lines, notes and the summary go to w, and
// (for watch) the objects to rows, all through it, so that the live status line (drawn on w)
// can be erased before each and redrawn after, and lines never interleave.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	rows  io.Writer
	json  bool
	start time.Time
	// statusText, when non-empty, is the status line currently drawn below the output.
	statusText string
	// persisted: the cache is persisted (--cache-dir), so the summary says how the start went.
	persisted bool
}

func newPrinter(w io.Writer, output string) *printer {
	return &printer{w: w, rows: w, json: output == "json", start: time.Now()}
}

// shown reports whether a transition deserves a line. Watch frames, list items and initial
// events are the steady state: a line each would bury the transitions that matter; a listing
// shows as one line per page (list-page-more, list-complete).
func shown(t driver.Transition) bool {
	switch t.Cause {
	case fsm.NoCause, fsm.CauseWatchEvent, fsm.CauseInitialEvent, fsm.CauseListItem:
		return false
	}
	return true
}

// waitOf is the delay of the timer a transition armed, if it armed one.
func waitOf(cmds []fsm.Command) (time.Duration, bool) {
	for _, c := range cmds {
		if c.Kind == fsm.CmdArmTimer {
			return c.Delay, true
		}
	}
	return 0, false
}

type transitionJSON struct {
	Type        string   `json:"type"`
	Elapsed     float64  `json:"elapsedSeconds"`
	From        string   `json:"from"`
	To          string   `json:"to"`
	Cause       string   `json:"cause"`
	Event       string   `json:"event"`
	RV          string   `json:"resourceVersion"`
	WaitSeconds *float64 `json:"waitSeconds,omitempty"`
	Failure     string   `json:"failure,omitempty"`
	// Message is what the server said (its Status message) or what went wrong on the connection.
	Message string `json:"message,omitempty"`
	// ListAvoided: the failure was answered by a re-watch where a relist-on-error reflector
	// would have listed everything again (Stats.ListsAvoided).
	ListAvoided bool `json:"listAvoided,omitempty"`
}

// transition is called on the reflector's goroutine; Commands must not be kept past return.
func (p *printer) transition(t driver.Transition) {
	if !shown(t) {
		return
	}
	elapsed := time.Since(p.start)
	wait, armed := waitOf(t.Commands)
	var failure, message string
	if f := t.Event.Failure; f != nil {
		failure, message = f.String(), f.Message
	}
	avoided := transitions.Table.Facts(t.Cause).AvoidsList.Avoids(t.Event.Failure != nil)
	if p.json {
		j := transitionJSON{Type: "transition", Elapsed: round3(elapsed.Seconds()), From: t.From.String(), To: t.To.String(),
			Cause: t.Cause.String(), Event: t.Event.Kind.String(), RV: t.Snapshot.LastRV, Failure: failure, Message: message,
			ListAvoided: avoided}
		if armed {
			s := round3(wait.Seconds())
			j.WaitSeconds = &s
		}
		p.emitJSON(j)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%8.3fs  %-9s → %-9s  %-26s rv=%s", elapsed.Seconds(), t.From, t.To, t.Cause, t.Snapshot.LastRV)
	if armed {
		fmt.Fprintf(&b, "  wait=%s", wait.Round(time.Millisecond))
	}
	if avoided {
		b.WriteString("  LIST avoided")
	}
	if failure != "" {
		// The server's message as it wrote it: quoting it would escape the quotes a 403's
		// message carries (User "system:anonymous").
		fmt.Fprintf(&b, "  (%s", failure)
		if message != "" {
			fmt.Fprintf(&b, ": %s", oneLineText(message))
		}
		b.WriteString(")")
	}
	p.line(b.String())
}

// oneLineText keeps a server's message on its line.
func oneLineText(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// note prints a line of the command's own narration (faults injected, checks).
func (p *printer) note(kind, text string, fields map[string]any) {
	if p.json {
		m := map[string]any{"type": kind, "elapsedSeconds": round3(time.Since(p.start).Seconds()), "message": text}
		for k, v := range fields {
			m[k] = v
		}
		p.emitJSON(m)
		return
	}
	p.line(text)
}

func (p *printer) emitJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"type":"error","message":%q}`, err.Error()))
	}
	p.line(string(b))
}

func (p *printer) line(s string) { p.write(p.w, s+"\n") }

// writerTo is w written through the printer: each Write (a whole line, as slog's handlers
// write them) erases the status line first and redraws it after.
func (p *printer) writerTo(w io.Writer) io.Writer { return printerWriter{p: p, w: w} }

type printerWriter struct {
	p *printer
	w io.Writer
}

func (pw printerWriter) Write(b []byte) (int, error) {
	pw.p.write(pw.w, string(b))
	return len(b), nil
}

// out writes s, whole lines, to the rows' writer.
func (p *printer) out(s string) { p.write(p.rows, s) }

func (p *printer) write(w io.Writer, s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.statusText != "" {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprint(w, s)
	if p.statusText != "" {
		fmt.Fprint(p.w, p.statusText)
	}
}

// status redraws the status line in place; "" erases it.
func (p *printer) status(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K"+s)
	p.statusText = s
}

type summaryJSON struct {
	Type           string         `json:"type"`
	WireFormat     string         `json:"wireFormat"`
	AnsweredFormat string         `json:"answeredFormat,omitempty"`
	Elapsed        float64        `json:"elapsedSeconds"`
	Lists          int            `json:"lists"`
	ListPages      int            `json:"listPages"`
	Relists        int            `json:"relists"`
	Watches        int            `json:"watches"`
	Retries        map[string]int `json:"retries"`
	ListsAvoided   int            `json:"listsAvoided"`
	BackingOff     float64        `json:"backingOffSeconds"`
	WatchEvents    int            `json:"watchEvents"`
	Objects        int            `json:"objects"`
	State          string         `json:"state"`
	RV             string         `json:"resourceVersion"`
	Synced         bool           `json:"synced"`
	// ListFailing is set while a listing has failed and not completed since.
	ListFailing *listFailingJSON `json:"listFailing,omitempty"`
	// Start is how the start went, with a persisted cache (--cache-dir): Stats.Start.
	Start string `json:"start,omitempty"`
	// Persist is how the cache's saves went (Stats.Persist), once one has ended.
	Persist *persistJSON `json:"persist,omitempty"`
}

type persistJSON struct {
	Saves       int        `json:"saves"`
	LastSavedRV string     `json:"lastSavedResourceVersion,omitempty"`
	Failures    int        `json:"failures,omitempty"`
	Since       *time.Time `json:"failingSince,omitempty"`
	LastError   string     `json:"lastError,omitempty"`
}

type listFailingJSON struct {
	Since    time.Time `json:"since"`
	Failures int       `json:"failures"`
	Relist   bool      `json:"relist"`
	Last     string    `json:"last"`
}

func orNone(s string) string {
	if s == "" {
		return "(no answer)"
	}
	return s
}

func (p *printer) summary(st rewatch.Stats) {
	elapsed := time.Since(p.start)
	if p.json {
		r := map[string]int{}
		for c, n := range st.Retries {
			r[c.String()] = n
		}
		s := summaryJSON{Type: "summary", Elapsed: round3(elapsed.Seconds()), Lists: st.Lists, ListPages: st.ListPages, Relists: st.Relists,
			Watches: st.Watches, Retries: r, ListsAvoided: st.ListsAvoided, BackingOff: round3(st.BackingOff.Seconds()),
			WatchEvents: st.WatchEvents, Objects: st.Objects, State: st.State.String(), RV: st.LastResourceVersion, Synced: st.Synced,
			WireFormat: st.WireFormat, AnsweredFormat: st.AnsweredFormat}
		if lf := st.ListFailing; lf != nil {
			s.ListFailing = &listFailingJSON{Since: lf.Since.UTC(), Failures: lf.Failures, Relist: lf.Relist, Last: lf.Last.String()}
		}
		if p.persisted {
			s.Start = st.Start.String()
		}
		if ps := st.Persist; ps != nil {
			s.Persist = &persistJSON{Saves: ps.Saves, LastSavedRV: ps.LastSavedRV, Failures: ps.Failures, LastError: ps.LastError}
			if ps.Failures > 0 {
				since := ps.FailingSince.UTC()
				s.Persist.Since = &since
			}
		}
		p.emitJSON(s)
		return
	}
	lines := []string{
		fmt.Sprintf("summary after %s", elapsed.Round(time.Millisecond)),
		fmt.Sprintf("  LISTs            %d (%d pages), relists %d", st.Lists, st.ListPages, st.Relists),
		fmt.Sprintf("  WATCHes          %d", st.Watches),
		fmt.Sprintf("  retries          %s", retriesText(st.Retries)),
		fmt.Sprintf("  LISTs avoided    %d", st.ListsAvoided),
		fmt.Sprintf("  backing off      %s", st.BackingOff.Round(time.Millisecond)),
		fmt.Sprintf("  watch events     %d", st.WatchEvents),
		fmt.Sprintf("  objects cached   %d", st.Objects),
		fmt.Sprintf("  state            %s at rv=%s", st.State, st.LastResourceVersion),
		fmt.Sprintf("  wire format      %s, answered in %s", st.WireFormat, orNone(st.AnsweredFormat)),
	}
	if p.persisted {
		lines = append(lines, "  start            "+st.Start.String())
	}
	if ps := st.Persist; ps != nil {
		lines = append(lines, "  cache saved      "+ps.String())
	}
	if lf := st.ListFailing; lf != nil {
		what := "first listing"
		if lf.Relist {
			what = "relist (the store serves an older state)"
		}
		lines = append(lines, fmt.Sprintf("  listing failing  %s, %d failures since %s; last: %s",
			what, lf.Failures, lf.Since.UTC().Format(time.RFC3339), lf.Last))
	}
	for _, l := range lines {
		p.line(l)
	}
}

// retriesText lists retries in the table's cause order, so runs compare line by line.
func retriesText(r map[fsm.Cause]int) string {
	if len(r) == 0 {
		return "none"
	}
	causes := make([]fsm.Cause, 0, len(r))
	total := 0
	for c, n := range r {
		causes = append(causes, c)
		total += n
	}
	sort.Slice(causes, func(i, j int) bool { return causes[i] < causes[j] })
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = fmt.Sprintf("%s=%d", c, r[c])
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }
