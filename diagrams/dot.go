package diagrams

import (
	"fmt"
	"html"
	"strings"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/fsm/fsmcheck"
)

// DOT renders the stateless machine built from fsm.Table (fsmcheck.NewStateless(fsm.Listing))
// through its own ToGraph, with each trigger id replaced by the cause's human label.
//
// ToGraph is kept rather than writing DOT by hand so the graph shows what the machine that
// validates Step actually permits, not a second reading of the table. It prints triggers with
// %v, which for a Cause is the journal id ("too-many-requests"); the issue wants the reasons
// ("429 / Retry-After") on the edges, hence the rewrite. ToGraph groups parallel edges into
// one HTML-table label, sorts states and triggers by name, and marks self-loops "Reentry":
// its output, and so ours, does not depend on map order.
func DOT() string {
	out, err := dot()
	if err != nil {
		// The input is the compiled-in table, so this is a bug (or a stateless upgrade that
		// changed ToGraph's format), not a runtime condition; the tests hit it first.
		panic(err)
	}
	return out
}

const dotHeader = "// Generated from fsm.Table by `go generate ./diagrams/`. Do not edit.\n"

func dot() (string, error) {
	g := fsmcheck.NewStateless(initialState).ToGraph()

	// Each (from, cause) is one table row and ToGraph prints it as one cell, so a cause's id
	// must occur as a cell exactly as many times as the table has rows for it. Counting
	// before replacing catches a ToGraph format change instead of emitting ids silently.
	rows := map[fsm.Cause]int{}
	for _, row := range fsm.Table {
		rows[row.Cause]++
	}
	pairs := make([]string, 0, 2*len(rows))
	for _, c := range fsm.Causes() {
		if rows[c] == 0 {
			continue
		}
		cell := dotCell(html.EscapeString(c.String()))
		if n := strings.Count(g, cell); n != rows[c] {
			return "", fmt.Errorf("diagrams: stateless ToGraph prints cause %q %d times, table has %d rows for it", c, n, rows[c])
		}
		pairs = append(pairs, cell, dotCell(html.EscapeString(c.Label())))
	}
	// One pass over the text, so a label can never be rewritten as if it were another id.
	g = strings.NewReplacer(pairs...).Replace(g)

	// Stopped is terminal. A heavier border marks it, since Mrecord, the shape ToGraph gives
	// every node, ignores peripheries and so cannot take the usual double border.
	stopped := fmt.Sprintf("\t%s [label=%q];\n", fsm.Stopped, fsm.Stopped.String())
	if !strings.Contains(g, stopped) {
		return "", fmt.Errorf("diagrams: stateless ToGraph has no node line %q", stopped)
	}
	g = strings.Replace(g, stopped, fmt.Sprintf("\t%s [label=%q, penwidth=2];\n", fsm.Stopped, fsm.Stopped.String()), 1)

	// Edge labels are long sentences and self-loops carry up to seven of them; without more
	// room dot packs them over neighbouring edges. The fonts are ones every browser maps to a
	// face with Graphviz's built-in metrics, so the boxes it sizes fit the text drawn.
	const rankdir = "\trankdir=\"LR\";\n"
	if !strings.Contains(g, rankdir) {
		return "", fmt.Errorf("diagrams: stateless ToGraph has no line %q", rankdir)
	}
	g = strings.Replace(g, rankdir, rankdir+dotStyle, 1)

	return dotHeader + g, nil
}

const dotStyle = "\tnodesep=0.6;\n\transep=1.2;\n" +
	"\tnode [fontname=\"Helvetica\", fontsize=14];\n" +
	"\tedge [fontname=\"Helvetica\", fontsize=11];\n"

func dotCell(text string) string { return `<TD ALIGN="LEFT">` + text + `</TD>` }
