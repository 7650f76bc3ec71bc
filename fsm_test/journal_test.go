package fsm_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/transitions"
)

func writeJournal(t require.TestingT, r run) *bytes.Buffer {
	var buf bytes.Buffer
	w, err := journal.NewWriter(&buf, journal.Header{Resource: "v1/configmaps", Started: t0, Config: journal.RecordConfig(r.m.Config())})
	require.NoError(t, err)
	for _, st := range r.steps {
		require.NoError(t, w.Write(st.gen.event, st.before.State, st.after.State, st.cause, st.commands))
	}
	require.NoError(t, w.Close())
	return &buf
}

// docs/design.md "Replay": a journal replays to the identical states and commands, and --check
// finds nothing to report.
func TestPropertyJournalReplaysIdentically(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		buf := writeJournal(t, r)
		i := 0
		final, err := journal.Replay(buf, journal.ReplayOptions{Check: true, OnStep: func(st journal.Step) {
			want := r.steps[i]
			require.Equal(t, want.after.State, st.To)
			require.Equal(t, want.cause, st.Cause)
			i++
		}})
		require.NoError(t, err)
		require.Equal(t, len(r.steps), i)
		last := r.steps[len(r.steps)-1].after
		require.Equal(t, last.State, final.State)
		require.Equal(t, last.LastRV, final.LastRV)
		require.Equal(t, last.Wait.Attempt, final.Wait.Attempt)
	})
}

func TestJournalCheckReportsTheFirstDivergence(t *testing.T) {
	r := scriptedRun(t, "start", "list-page rv=100", "watch-open-failed code=429", "+800ms timer-fired")
	text := writeJournal(t, r).String()
	tampered := strings.Replace(text, `"delay":800000000`, `"delay":900000000`, 1)
	require.NotEqual(t, text, tampered)
	_, err := journal.Replay(strings.NewReader(tampered), journal.ReplayOptions{Check: true})
	var d *journal.Divergence
	require.True(t, errors.As(err, &d), "got %v", err)
	require.Equal(t, 4, d.Line)
	require.Equal(t, "commands", d.Field)
	require.Contains(t, d.Error(), "watch-open-failed")
}

func TestJournalRejectsBadInput(t *testing.T) {
	good := writeJournal(t, scriptedRun(t, "start", "list-page rv=100")).String()
	lines := strings.SplitAfter(good, "\n")
	for name, tc := range map[string]struct{ text, want string }{
		"empty":          {"", "empty file"},
		"not json":       {"<html>oops</html>\n", "line 1"},
		"wrong format":   {strings.Replace(lines[0], journal.Format, "other/v9", 1), `format "other/v9"`},
		"truncated line": {lines[0] + lines[1][:20] + "\n", "line 2"},
		"unknown field":  {lines[0] + `{"seq":1,"event":{"kind":"start","now":"2026-01-01T00:00:00Z"},"from":"Listing","to":"Listing","bogus":1}` + "\n", "line 2"},
		"unknown kind":   {lines[0] + `{"seq":1,"event":{"kind":"explode","now":"2026-01-01T00:00:00Z"},"from":"Listing","to":"Listing"}` + "\n", "unknown event kind"},
		"no kind":        {lines[0] + `{"seq":1,"event":{"now":"2026-01-01T00:00:00Z"},"from":"Listing","to":"Listing"}` + "\n", "without an event kind"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := journal.Replay(strings.NewReader(tc.text), journal.ReplayOptions{Check: true})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// scriptedRun plays transcript lines and keeps the steps for journaling.
func scriptedRun(t *testing.T, lines ...string) run {
	t.Helper()
	return scriptedRunOn(t, transcriptMachine(), lines...)
}

func scriptedRunOn(t *testing.T, m *transitions.Machine, lines ...string) run {
	t.Helper()
	sr := newScriptRunner(m)
	var r run
	r.m = sr.m
	for _, l := range lines {
		before := sr.s
		_, err := sr.runLine(l)
		require.NoError(t, err)
		st := sr.log[len(sr.log)-1]
		r.steps = append(r.steps, runStep{gen: generated{event: st.event}, before: before, after: sr.s, cause: st.cause, commands: st.commands})
		r.events = append(r.events, st.event)
	}
	return r
}

// journal/record.go: a journal of format v2 was written when every Retry-After was waited
// exactly unless RetryAfterSpread was set. It replays as recorded (the reader turns the
// spread off), and one recorded with the old opt-in spread is refused, not misreplayed.
func TestJournalV2ReplaysWithExactRetryAfter(t *testing.T) {
	r := scriptedRunOn(t, transitions.MustNew(transcriptConfig(func(c *transitions.Config) { c.RetryAfterSpread = transitions.RetryAfterExact })),
		"start", "list-failed status=429 retry-after-seconds=1", "+1s timer-fired",
		"list-failed status=429 retry-after-seconds=1", "+1s timer-fired", "list-page rv=100")
	v2 := strings.Replace(strings.Replace(writeJournal(t, r).String(), journal.Format, "rewatch-journal/v2", 1), `"retryAfterSpread":-1,`, "", 1)
	require.Contains(t, v2, `"delay":1000000000`)
	final, err := journal.Replay(strings.NewReader(v2), journal.ReplayOptions{Check: true})
	require.NoError(t, err)
	require.Equal(t, "100", final.LastRV)

	spread := strings.Replace(v2, `"retryAfterCap"`, `"retryAfterSpread":1,"retryAfterCap"`, 1)
	_, err = journal.Replay(strings.NewReader(spread), journal.ReplayOptions{Check: true})
	require.ErrorContains(t, err, "spread every Retry-After")
}

// A v2 journal recorded on the real kube-apiserver through the storm (bench/RESULTS.md,
// "Rewatch's decisions") still replays to the decisions it recorded.
func TestJournalV2FromTheStormReplays(t *testing.T) {
	f, err := os.Open("../bench/results/storm-seed12-rewatch-head.journal")
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Contains(t, string(b), `"cause":"too-many-requests"`, "the storm journal holds the cause's old id")
	_, err = journal.Replay(bytes.NewReader(b), journal.ReplayOptions{Check: true})
	require.NoError(t, err)
}

// A cause renamed since a journal was written is read by its old id (fsm's causeIDs, Aliases):
// a v3 journal that says too-many-requests for server-busy replays to the same decisions.
func TestJournalWithARenamedCauseReplays(t *testing.T) {
	r := scriptedRunOn(t, transitions.MustNew(transcriptConfig(nil)),
		"start", "list-page rv=100", "watch-open-failed status=429 retry-after=2s", "+2s timer-fired", "watch-opened")
	recorded := writeJournal(t, r).String()
	require.Contains(t, recorded, `"server-busy"`)
	old := strings.ReplaceAll(recorded, `"server-busy"`, `"too-many-requests"`)
	var causes []fsm.Cause
	_, err := journal.Replay(strings.NewReader(old), journal.ReplayOptions{Check: true, OnStep: func(st journal.Step) {
		causes = append(causes, st.Record.Cause)
	}})
	require.NoError(t, err)
	require.Contains(t, causes, fsm.CauseServerBusy)
}

// A journal written before a watch's silence followed its cadence (its header has no
// activeWatchSilence) replays without the deadlines such runs never armed, and one written
// since replays the deadlines it recorded.
func TestJournalBeforeTheCadenceBoundReplaysWithoutDeadlines(t *testing.T) {
	lines := []string{"start", "list-page rv=100", "watch-opened",
		"+250ms watch-event type=MODIFIED key=default/a rv=101",
		"+250ms watch-event type=MODIFIED key=default/a rv=102",
		"+250ms watch-event type=MODIFIED key=default/a rv=103",
		"+1m watch-ended"}
	old := writeJournal(t, scriptedRun(t, lines...)).String()
	require.Contains(t, old, `"activeWatchSilence":-1,`)
	old = strings.Replace(old, `"activeWatchSilence":-1,`, "", 1)
	_, err := journal.Replay(strings.NewReader(old), journal.ReplayOptions{Check: true})
	require.NoError(t, err)

	on := transitions.MustNew(transcriptConfig(func(c *transitions.Config) { c.ActiveWatchSilence = 0 }))
	r := scriptedRunOn(t, on, lines...)
	require.Equal(t, fsm.CmdWatchDeadline, r.steps[4].commands[len(r.steps[4].commands)-1].Kind, "the second frame arms a deadline")
	_, err = journal.Replay(writeJournal(t, r), journal.ReplayOptions{Check: true})
	require.NoError(t, err)
}
