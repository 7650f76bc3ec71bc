package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
)

// A failing listing is in the summary, text and JSON: since when, how many failures, the last.
func TestSummaryShowsAFailingListing(t *testing.T) {
	since := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	st := rewatch.Stats{ListFailing: &rewatch.ListFailing{Since: since, Failures: 3, Relist: true,
		Last: rewatch.Failure{Cause: fsm.CauseListFailed, Code: 500, Reason: "InternalError", Message: "etcd is down"}}}
	var text, js bytes.Buffer
	newPrinter(&text, "text").summary(st)
	newPrinter(&js, "json").summary(st)
	for _, want := range []string{"listing failing  relist (the store serves an older state), 3 failures since 2026-12-04T20:00:00Z",
		"last: list-failed: 500 InternalError: etcd is down"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{`"listFailing":{"since":"2026-12-04T20:00:00Z","failures":3,"relist":true,"last":"list-failed: 500 InternalError: etcd is down"}`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON summary lacks %s: %s", want, js.String())
		}
	}
}

// The summary says how many relists there were, apart from the LISTs they took.
func TestSummaryCountsRelists(t *testing.T) {
	st := rewatch.Stats{Lists: 5, ListPages: 7, Relists: 2}
	var text, js bytes.Buffer
	newPrinter(&text, "text").summary(st)
	newPrinter(&js, "json").summary(st)
	if want := "LISTs            5 (7 pages), relists 2"; !strings.Contains(text.String(), want) {
		t.Errorf("text summary lacks %q:\n%s", want, text.String())
	}
	if want := `"lists":5,"listPages":7,"relists":2`; !strings.Contains(js.String(), want) {
		t.Errorf("JSON summary lacks %s: %s", want, js.String())
	}
}

// A line written through the printer while a status line is drawn erases it first and
// redraws it after: the demo's log lines never land on its status line.
func TestWriterToKeepsTheStatusLineBelow(t *testing.T) {
	var status, logs bytes.Buffer
	p := newPrinter(&status, "text")
	p.status("  Watching  objects=3")
	_, err := p.writerTo(&logs).Write([]byte("level=WARN msg=refused\n"))
	if err != nil {
		t.Fatal(err)
	}
	if logs.String() != "level=WARN msg=refused\n" {
		t.Errorf("log line: %q", logs.String())
	}
	if want := "\r\033[K  Watching  objects=3\r\033[K  Watching  objects=3"; status.String() != want {
		t.Errorf("status stream: %q, want %q (erased, then redrawn)", status.String(), want)
	}
}
