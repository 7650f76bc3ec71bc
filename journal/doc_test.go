package journal

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// docs/journal.md is the journal's format for whoever reads one without this package: every
// record and field the writer can write, and every kind of event and command, is named there,
// in its section. The names are read from the types themselves (their json tags, the enums'
// names), so a field added to an event, a command, the header or the policy fails here until
// the page says what it means.
func TestJournalDocNamesEveryRecordAndField(t *testing.T) {
	b, err := os.ReadFile("../docs/journal.md")
	require.NoError(t, err)
	doc := string(b)
	section := func(from, to string) string {
		i := strings.Index(doc, from)
		require.GreaterOrEqual(t, i, 0, "docs/journal.md has no %q", from)
		j := strings.Index(doc[i:], to)
		require.GreaterOrEqual(t, j, 0, "docs/journal.md has no %q after %q", to, from)
		return doc[i : i+j]
	}
	header := section("### Header", "### Record")
	record := section("### Record", "`event` fields")
	events := section("`event` fields", "`commands[]` fields")
	commands := section("`commands[]` fields", "## Example")

	names := func(where string, text string, ns []string) {
		t.Helper()
		for _, n := range ns {
			assert.True(t, strings.Contains(text, "`"+n+"`"), "docs/journal.md does not name %s %q", where, n)
		}
	}
	names("the header field", header, jsonNames(reflect.TypeFor[Header](), ""))
	names("the configuration field", header, jsonNames(reflect.TypeFor[ConfigRecord](), "config."))
	names("the record field", record, jsonNames(reflect.TypeFor[Record](), ""))
	names("the event field", events, jsonNames(reflect.TypeFor[fsm.Event](), ""))
	names("the failure field", events, jsonNames(reflect.TypeFor[fsm.Failure](), ""))
	names("the command field", commands, jsonNames(reflect.TypeFor[fsm.Command](), ""))
	names("the event kind", events, enumNames[fsm.EventKind](t))
	names("the command kind", commands, enumNames[fsm.CommandKind](t))
	var hooks []string
	for _, h := range fsm.Hooks() {
		hooks = append(hooks, h.String())
	}
	names("the hook", events, hooks)
}

// jsonNames are the names a struct's fields are written by, embedded structs' included.
func jsonNames(typ reflect.Type, prefix string) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonNames(f.Type, prefix)...)
		case !f.IsExported():
		case name == "":
			out = append(out, prefix+f.Name)
		default:
			out = append(out, prefix+name)
		}
	}
	return out
}

// enumNames are the names of an enum's values, from 1 to the first without one.
func enumNames[T interface {
	~uint8
	String() string
}](t *testing.T) []string {
	var out []string
	for v := T(1); v != 0; v++ {
		s := v.String()
		if strings.Contains(s, "(") { // T(n): no such value
			break
		}
		out = append(out, s)
	}
	require.NotEmpty(t, out)
	return out
}

// The policy's tunables are the configuration's fields (transitions.Tunables): the check above
// reads them from ConfigRecord, which embeds the policy.
func TestJournalConfigIsThePolicy(t *testing.T) {
	fields := jsonNames(reflect.TypeFor[ConfigRecord](), "")
	for _, tn := range transitions.Tunables() {
		assert.Contains(t, fields, tn.JSON)
	}
}
