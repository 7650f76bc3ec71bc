package fsm

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// eventTexts are events as transcripts print them, one of each field and failure shape.
var eventTexts = []string{
	"start",
	`start rv="100" items=3000`,
	`start refused="snapshot of another type: v2"`,
	`list-item request=1 key=default/a rv="90" in-snapshot`,
	`list-page request=1 rv="150" continue="c1" items=1`,
	"watch-opened request=2",
	`watch-event request=2 type=MODIFIED key=default/a rv="101"`,
	`watch-event request=2 type=BOOKMARK rv="300" initial-events-end`,
	"watch-error request=2 status=429/TooManyRequests retryAfterSeconds=5",
	"watch-open-failed request=2 status=504/Timeout cause=ResourceVersionTooLarge",
	"watch-open-failed request=3 status=410/Expired cache-oldest=100000",
	"list-failed request=1 status=400/BadRequest code=400",
	"watch-open-failed request=2 code=502 retry-after=2s",
	"watch-ended request=2 transport=decode",
	"timer-fired timer=5",
	"answer request=4 hook=refresh-credentials",
	`answer request=4 hook=refresh-credentials error="hook refresh-credentials: exec plugin failed"`,
	"stop",
}

// What the printer writes, the parser reads back to the same text: the codec is one table.
func TestEventTextRoundTrips(t *testing.T) {
	p := EventParser{WatchedRV: "100"}
	for _, text := range eventTexts {
		e, err := p.Parse(text)
		require.NoError(t, err, text)
		assert.Equal(t, text, e.String())
	}
}

// A script may write a failure shorter than it prints: a status without its reason (the one
// kube-apiserver gives the code), reason= apart, retry-after-seconds=; and any value bare or
// quoted.
func TestEventTextShorthands(t *testing.T) {
	p := EventParser{Defaults: Event{Request: 7, Now: time.Unix(5, 0)}, WatchedRV: "42"}
	for text, want := range map[string]string{
		"watch-error status=429 retry-after-seconds=5":         "watch-error request=7 status=429/TooManyRequests retryAfterSeconds=5",
		"watch-open-failed status=504 reason=Timeout":          "watch-open-failed request=7 status=504/Timeout",
		"list-failed status=418":                               "list-failed request=7 status=418/",
		"list-page rv=100 continue=c1":                         `list-page request=7 rv="100" continue="c1"`,
		"watch-error request=3 status=410 cache-oldest=90":     "watch-error request=3 status=410/Expired cache-oldest=90",
		"answer hook=refresh-credentials error=failed":         `answer request=7 hook=refresh-credentials error="failed"`,
		`start refused="a \"quoted\" reason"`:                  `start request=7 refused="a \"quoted\" reason"`,
		"timer-fired   timer=2":                                "timer-fired request=7 timer=2",
		"watch-event type=ADDED key=ns/a rv=\"5\" in-snapshot": `watch-event request=7 type=ADDED key=ns/a rv="5" in-snapshot`,
	} {
		e, err := p.Parse(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, e.String(), text)
		assert.Equal(t, time.Unix(5, 0), e.Now, "the defaults' time")
	}
	e, err := p.Parse("watch-error status=410 cache-oldest=90")
	require.NoError(t, err)
	asked, oldest, ok := e.Failure.WatchCacheTooOld()
	require.True(t, ok)
	assert.Equal(t, [2]uint64{42, 90}, [2]uint64{asked, oldest}, "the watch cache's 410 names the RV the watch asked for")
	assert.Equal(t, metav1.StatusFailure, e.Failure.Status.Status)
}

func TestEventTextRefusesWhatItCannotRead(t *testing.T) {
	for text, want := range map[string]string{
		"":                           "an empty event",
		"explode":                    `unknown event kind "explode"`,
		"watch-error bogus=1":        `unknown field "bogus=1"`,
		"watch-error status=many":    `field "status=many"`,
		"timer-fired timer=-1":       `field "timer=-1"`,
		"watch-ended transport=warp": `unknown transport "warp"`,
		"answer hook=refresh-credentials answer=yes": "answers nothing but whether it worked",
		"answer hook=ask-anyone":                     `unknown hook "ask-anyone"`,
		`start refused="unterminated`:                `field "refused=\"unterminated"`,
	} {
		_, err := EventParser{}.Parse(text)
		assert.ErrorContains(t, err, want, "%q", text)
	}
}

// testAnswer is a hook's answer with data, for the tests: "go", or "wait-D".
type testAnswer struct{ wait time.Duration }

func (a testAnswer) MarshalText() ([]byte, error) {
	if a.wait == 0 {
		return []byte("go"), nil
	}
	return []byte("wait-" + a.wait.String()), nil
}

func (a *testAnswer) UnmarshalText(b []byte) error {
	if string(b) == "go" {
		*a = testAnswer{}
		return nil
	}
	d, ok := strings.CutPrefix(string(b), "wait-")
	if !ok {
		return fmt.Errorf("want go or wait-D, got %q", b)
	}
	w, err := time.ParseDuration(d)
	if err != nil || w <= 0 {
		return fmt.Errorf("want a positive wait, got %q", d)
	}
	*a = testAnswer{wait: w}
	return nil
}

// withAnswers declares, for one test, that h answers with a testAnswer.
func withAnswers(t *testing.T, h Hook) {
	saved := hooks[h]
	hooks[h] = hookDecl{name: saved.name, answer: answerOf[testAnswer](), examples: []string{"go", "wait-5s"}}
	t.Cleanup(func() { hooks[h] = saved })
}

// A hook that answers with data: its answer is a typed value on the event, which the text and
// the journal hold as its one word and read back through the hook.
func TestAnAnswerWithDataIsReadThroughItsHook(t *testing.T) {
	withAnswers(t, HookRefreshCredentials)
	h := HookRefreshCredentials
	assert.True(t, h.Answers())
	assert.Equal(t, []string{"go", "wait-5s"}, h.Examples())
	for _, text := range h.Examples() {
		line := "answer request=3 hook=" + h.String() + " answer=" + text
		e, err := EventParser{}.Parse(line)
		require.NoError(t, err)
		assert.Equal(t, line, e.String())
		require.NoError(t, h.CheckAnswer(e.Answer))

		b, err := json.Marshal(e)
		require.NoError(t, err)
		assert.Contains(t, string(b), `"answer":"`+text+`"`)
		var back Event
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, e, back, "the journal's event")
	}
	e, _ := EventParser{}.Parse("answer hook=" + h.String() + " answer=wait-2m")
	assert.Equal(t, testAnswer{wait: 2 * time.Minute}, e.Answer)

	_, err := EventParser{}.Parse("answer hook=" + h.String() + " answer=later")
	assert.ErrorContains(t, err, `want go or wait-D, got "later"`)
	var bad Event
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"kind":"answer","now":"2026-01-01T00:00:00Z","hook":"refresh-credentials","answer":"wait--1s"}`), &bad),
		"want a positive wait")

	assert.ErrorContains(t, h.CheckAnswer(nil), "answered no fsm.testAnswer")
	assert.ErrorContains(t, h.CheckAnswer(otherAnswer{}), "answers a fsm.testAnswer, not a fsm.otherAnswer")
}

type otherAnswer struct{}

func (otherAnswer) MarshalText() ([]byte, error) { return []byte("other"), nil }

// A hook that answers nothing but whether it worked takes no value.
func TestAHookWithoutAnswersTakesNone(t *testing.T) {
	h := HookRefreshCredentials
	assert.False(t, h.Answers())
	assert.Equal(t, []string{""}, h.Examples())
	assert.NoError(t, h.CheckAnswer(nil))
	assert.ErrorContains(t, h.CheckAnswer(otherAnswer{}), "answers nothing but whether it worked")
	_, err := h.ParseAnswer("x")
	assert.Error(t, err)
}

// The journal reads its events strictly: a field it does not know is an error.
func TestEventJSONIsStrict(t *testing.T) {
	var e Event
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"kind":"start","now":"2026-01-01T00:00:00Z","bogus":1}`), &e), `unknown field "bogus"`)
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"answer","now":"2026-01-01T00:00:00Z","request":3,"hook":"refresh-credentials"}`), &e))
	assert.Equal(t, Event{Kind: EvAnswer, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Request: 3, Hook: HookRefreshCredentials}, e)
}

// FuzzEventText: whatever the parser reads, the printer writes in words the parser reads back
// to the same text.
func FuzzEventText(f *testing.F) {
	for _, text := range eventTexts {
		f.Add(text)
	}
	f.Add("watch-error status=429 retry-after-seconds=5")
	f.Add(`start refused="a b" items=2`)
	f.Fuzz(func(t *testing.T, text string) {
		e, err := EventParser{WatchedRV: "7"}.Parse(text)
		if err != nil {
			return
		}
		printed := e.String()
		again, err := EventParser{WatchedRV: "7"}.Parse(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not read: %v", text, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("%q printed as %q, read back as %q", text, printed, again.String())
		}
	})
}
