package diagrams

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// The committed diagrams are read on GitHub without running anything, so they must be what
// the table renders today (the SVG is checked in diagrams/svg).
func TestCommittedDiagramsMatchTable(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			ext, err := FileExt(format)
			require.NoError(t, err)
			path := filepath.Join("..", "docs", "reflector."+ext)
			committed, err := os.ReadFile(path)
			require.NoError(t, err, "%s is missing: run `go generate ./diagrams/`", path)
			want, err := Render(format)
			require.NoError(t, err)
			if string(committed) != string(want) {
				t.Fatalf("%s is stale: it no longer matches fsm.Table. Run `go generate ./diagrams/` and commit docs/reflector.*", path)
			}
		})
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	for _, format := range []string{"mermaid", "dot"} {
		a, err := Render(format)
		require.NoError(t, err)
		b, err := Render(format)
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), format)
	}
}

func TestMermaidHasEveryRowAsAnEdge(t *testing.T) {
	lines := strings.Split(Mermaid(), "\n")
	var edges []string
	for _, l := range lines {
		if strings.Contains(l, " --> ") {
			edges = append(edges, strings.TrimSpace(l))
		}
	}
	require.Len(t, edges, len(transitions.Table.Rows())+2, "one edge per row plus [*] --> Listing and Stopped --> [*]")
	assert.Equal(t, "[*] --> Listing", edges[0])
	assert.Equal(t, "Stopped --> [*]", edges[len(edges)-1])
	for i, row := range transitions.Table.Rows() {
		want := fmt.Sprintf("%s --> %s : %s", row.From, row.To, mermaidText(EdgeLabel(row)))
		assert.Equal(t, want, edges[i+1], "row %d (%s)", i, row.Cause)
	}
}

// A reader follows a failure through Backoff: its edge in names the state the wait goes on in,
// and Backoff has an edge into that state.
func TestMermaidWaitsSayWhereTheyLead(t *testing.T) {
	lines := strings.Split(Mermaid(), "\n")
	for _, row := range transitions.Table.Rows() {
		if row.To != fsm.Backoff {
			continue
		}
		in := fmt.Sprintf("    %s --> Backoff : %s", row.From, mermaidText(transitions.Table.Label(row.Cause)+" ⇒ then "+row.Then.String()))
		assert.Contains(t, lines, in, "row %s --%s-->", row.From, row.Cause)
		timer, ok := transitions.Table.Resume(row.Then)
		require.True(t, ok)
		out := fmt.Sprintf("    Backoff --> %s : %s", row.Then, mermaidText(transitions.Table.Label(timer)))
		assert.Contains(t, lines, out, "no way out of Backoff into %s", row.Then)
	}
	assert.Contains(t, Mermaid(), "    note right of Backoff\n")
	assert.Contains(t, Mermaid(), "    note left of Listing\n")
	assert.Contains(t, Mermaid(), "    note right of Relisting\n")
}

func TestEdgeLabelNamesThenOnlyForWaits(t *testing.T) {
	assert.Equal(t, transitions.Table.Label(fsm.CauseServerBusy)+" ⇒ then Watching",
		EdgeLabel(fsm.Transition{From: fsm.Watching, Cause: fsm.CauseServerBusy, To: fsm.Backoff, Then: fsm.Watching}))
	assert.Equal(t, transitions.Table.Label(fsm.CauseExpired),
		EdgeLabel(fsm.Transition{From: fsm.Watching, Cause: fsm.CauseExpired, To: fsm.Relisting}))
}

func TestMermaidDeclaresEveryState(t *testing.T) {
	lines := strings.Split(Mermaid(), "\n")
	for _, s := range fsm.States() {
		assert.Contains(t, lines, "    "+s.String())
	}
	assert.Equal(t, "stateDiagram-v2", lines[0])
}

// Mermaid's state-diagram lexer ends a label at ':' or ';' and reads quotes and angle brackets
// as syntax; an unescaped one makes GitHub show a parse error instead of the diagram. Notes are
// written as they are, so their text must hold none of these at all.
func TestMermaidLabelsHoldNoSyntax(t *testing.T) {
	for _, n := range notes {
		for _, l := range n.lines {
			assert.NotContainsf(t, l, ":", "note on %s", n.state)
			assert.NotContainsf(t, l, ";", "note on %s", n.state)
			assert.NotContainsf(t, l, `"`, "note on %s", n.state)
			assert.NotContainsf(t, l, "<", "note on %s", n.state)
			assert.NotContainsf(t, l, "#", "note on %s", n.state)
			assert.NotEqualf(t, "end note", strings.TrimSpace(l), "note on %s", n.state)
		}
	}
	for _, l := range strings.Split(Mermaid(), "\n") {
		_, label, ok := strings.Cut(l, " --> ")
		if !ok {
			continue
		}
		_, label, _ = strings.Cut(label, " : ")
		label = mermaidEntity.ReplaceAllString(label, "")
		assert.NotContainsf(t, label, ":", "line %q", l)
		assert.NotContainsf(t, label, ";", "line %q", l)
		assert.NotContainsf(t, label, `"`, "line %q", l)
		assert.NotContainsf(t, label, "<", "line %q", l)
	}
	assert.Equal(t, "start#58; LIST RV=0", mermaidText("start: LIST RV=0"))
	assert.Equal(t, "RV=#34;#34; #35;58#59;", mermaidText(`RV="" #58;`))
}

var mermaidEntity = regexp.MustCompile(`#[0-9]+;`)

func TestDOTHasEveryRowAsAnEdge(t *testing.T) {
	edges := map[string]string{} // "From -> To" → its label
	for _, l := range strings.Split(DOT(), "\n") {
		l = strings.TrimSpace(l)
		head, label, ok := strings.Cut(l, " [label=")
		if ok && strings.Contains(head, " -> ") {
			edges[head] = label
		}
	}
	for _, row := range transitions.Table.Rows() {
		head := fmt.Sprintf("%s -> %s", row.From, row.To)
		require.Contains(t, edges, head, "row %s --%s-->", row.From, row.Cause)
		assert.Contains(t, edges[head], dotCell(html.EscapeString(EdgeLabel(row))),
			"edge %s lacks the label of %s", head, row.Cause)
	}
	assert.Contains(t, DOT(), "\tinit -> "+initialState.String()+"\n", "no start arrow")
}

func TestDOTLabelsAreHumanNotIDs(t *testing.T) {
	d := DOT()
	for _, c := range fsm.Causes() {
		if c.String() == transitions.Table.Label(c) {
			continue // "stop" reads the same either way
		}
		assert.NotContains(t, d, dotCell(c.String()), "cause %s still shown by its id", c)
	}
	assert.Contains(t, d, dotCell(html.EscapeString(transitions.Table.Label(fsm.CauseServerBusy)+" ⇒ then Watching")))
	assert.Contains(t, d, dotCell(html.EscapeString(transitions.Table.Label(fsm.CauseInternalErrorInWindow)+" ⇒ then Watching")))
}

func TestDOTDeclaresEveryState(t *testing.T) {
	d := DOT()
	for _, s := range fsm.States() {
		assert.Contains(t, d, fmt.Sprintf("\t%s [label=%q", s, s.String()))
	}
}

func TestRenderRejectsUnknownFormat(t *testing.T) {
	_, err := Render("png")
	assert.ErrorContains(t, err, `unknown format "png"`)
	_, err = FileExt("png")
	assert.Error(t, err)
}

func TestReadmeShowsTheCurrentDiagram(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	want, err := SpliceReadme(string(b))
	require.NoError(t, err)
	require.Equal(t, want, string(b), "README.md's diagram is stale: run `go generate ./diagrams/` and commit README.md")
}
