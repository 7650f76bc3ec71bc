package fsm

import (
	"encoding"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type textEnum interface {
	comparable
	~uint8
	String() string
	encoding.TextMarshaler
}

// checkEnum checks one enum against the rules of enumNames: every named value prints, marshals
// and unmarshals as its name; the next value past the names prints as Type(n) and does not
// marshal; an unknown name does not unmarshal.
func checkEnum[T textEnum, P interface {
	*T
	encoding.TextUnmarshaler
}](t *testing.T, typ string, want []string) {
	t.Run(typ, func(t *testing.T) {
		for i, name := range want {
			v := T(i)
			if name == "" && i != 0 {
				continue
			}
			assert.Equal(t, name, v.String(), "String of %s(%d)", typ, i)
			b, err := v.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, name, string(b))
			var back T
			require.NoError(t, P(&back).UnmarshalText(b))
			assert.Equal(t, v, back, "%q reads back", name)
		}
		past := T(len(want))
		assert.Equal(t, typ+"("+strconv.Itoa(len(want))+")", past.String())
		_, err := past.MarshalText()
		assert.ErrorContains(t, err, "fsm: unknown")
		var v T
		assert.ErrorContains(t, P(&v).UnmarshalText([]byte("no-such-name")), `"no-such-name"`)
	})
}

// The names are what journals hold: changing one breaks every journal written before.
func TestEnumNames(t *testing.T) {
	checkEnum[State](t, "State", []string{"Listing", "Watching", "Backoff", "Relisting", "Stopped"})
	checkEnum[EventKind](t, "EventKind", []string{"", "start", "list-page", "list-failed", "watch-opened",
		"watch-event", "watch-error", "watch-open-failed", "watch-ended", "timer-fired", "stop", "list-item", "answer"})
	checkEnum[CommandKind](t, "CommandKind", []string{"", "list", "watch", "cancel-request", "arm-timer",
		"cancel-timer", "stage", "replace-store", "discard-staged", "apply", "stopped", "watch-deadline", "ask",
		"restore", "drop-snapshot"})
	checkEnum[WatchEventType](t, "WatchEventType", []string{"", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
	checkEnum[Transport](t, "Transport", []string{"", "refused", "reset", "eof", "timeout", "decode", "other", "too-large", "stalled"})
	checkEnum[Class](t, "Class", []string{"", "busy", "internal", "expired", "too-large-rv", "transport", "rejected"})
	ids := []string{""}
	for _, c := range Causes() {
		ids = append(ids, causeIDs[c].ID)
	}
	checkEnum[Cause](t, "Cause", ids)
}

func TestEveryCauseHasAnID(t *testing.T) {
	seen := map[string]Cause{}
	for _, c := range Causes() {
		require.NotEmpty(t, c.String(), "cause %d has no id", c)
		if other, dup := seen[c.String()]; dup {
			t.Fatalf("causes %d and %d share the id %q", other, c, c.String())
		}
		seen[c.String()] = c
	}
	assert.Equal(t, "", NoCause.String(), "an ignored event's cause prints as nothing")
}

// A zero State is Listing, a real state: "" is not a state name.
func TestStateHasNoEmptyName(t *testing.T) {
	var s State = Stopped
	assert.Error(t, s.UnmarshalText(nil))
	assert.Equal(t, Stopped, s, "a failed read leaves the value alone")
}

func TestJSONNamesEnums(t *testing.T) {
	b, err := json.Marshal(struct {
		From, To State
		Cause    Cause `json:",omitempty"`
	}{Backoff, Relisting, CauseRetryRelist})
	require.NoError(t, err)
	assert.JSONEq(t, `{"From":"Backoff","To":"Relisting","Cause":"retry-relist"}`, string(b))
}

func TestTransportErrorReadsWithoutAKind(t *testing.T) {
	assert.Equal(t, "reset: read tcp", (&TransportError{Transport: Reset, Message: "read tcp"}).Error())
	assert.Equal(t, "no route", (&TransportError{Message: "no route"}).Error())
}
