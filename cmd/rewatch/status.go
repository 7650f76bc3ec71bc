package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rewatch/rewatch"
	"golang.org/x/term"
)

// isTerminal: the live status line uses carriage returns and escape codes, which only make
// sense on a terminal; in a pipe or file they would be noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// statusInterval is how often the status line is redrawn; events/s is averaged over it.
const statusInterval = 500 * time.Millisecond

// startStatus redraws "objects, events/s, state" until ctx ends; the returned func stops it,
// erases the line and waits for the goroutine, so nothing writes after the summary.
func startStatus(ctx context.Context, p *printer, stats func() rewatch.Stats) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(statusInterval)
		defer t.Stop()
		last, lastAt := 0, time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				st := stats()
				rate := float64(st.WatchEvents-last) / now.Sub(lastAt).Seconds()
				last, lastAt = st.WatchEvents, now
				p.status(fmt.Sprintf("  %s  objects=%d  events/s=%.1f  rv=%s", st.State, max(st.Objects, 0), rate, st.LastResourceVersion))
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		p.status("")
	}
}
