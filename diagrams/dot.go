package diagrams

import (
	"fmt"
	"html"
	"strings"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transitions/fsmcheck"
)

// DOT renders the stateless machine built from transitions.Table (fsmcheck.NewStateless(fsm.Listing))
// through its own ToGraph, with each trigger id replaced by its row's EdgeLabel.
//
// ToGraph is kept rather than writing DOT by hand so the graph shows what the machine that
// validates Step actually permits, not a second reading of the table. It prints triggers with
// %v, which for a Cause is the journal id ("server-busy"); a reader wants the reasons ("server
// busy / Retry-After → wait, re-WATCH") and, for a wait, where it leads, hence the rewrite.
// ToGraph groups parallel edges into one HTML-table label, sorts states and triggers by name,
// and marks self-loops "Reentry": its output, and so ours, does not depend on map order.
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
	g, err := dotLabels(fsmcheck.NewStateless(initialState).ToGraph())
	if err != nil {
		return "", err
	}

	// Stopped is terminal. A heavier border marks it, since Mrecord, the shape ToGraph gives
	// every node, ignores peripheries and so cannot take the usual double border.
	stopped := fmt.Sprintf("\t%s [label=%q];\n", fsm.Stopped, fsm.Stopped.String())
	if !strings.Contains(g, stopped) {
		return "", fmt.Errorf("diagrams: stateless ToGraph has no node line %q", stopped)
	}
	g = strings.Replace(g, stopped, fmt.Sprintf("\t%s [label=%q, penwidth=2];\n", fsm.Stopped, fsm.Stopped.String()), 1)

	// Edge labels are long sentences and self-loops carry up to ten of them; without more
	// room dot packs them over neighbouring edges. See dotStyle for the font.
	const rankdir = "\trankdir=\"LR\";\n"
	if !strings.Contains(g, rankdir) {
		return "", fmt.Errorf("diagrams: stateless ToGraph has no line %q", rankdir)
	}
	g = strings.Replace(g, rankdir, rankdir+dotStyle, 1)

	return dotHeader + g, nil
}

// dotStyle spaces the ranks and nodes and names the font. dot sizes every label by its
// built-in metrics for the font named, and a renderer that draws the text in a wider face
// than that runs it into its neighbours (with Helvetica's metrics, DejaVu Sans — what
// rsvg-convert and most Linux browsers draw for sans-serif — overran the labels beside
// Watching and Relisting). So the layout is made with DejaVu Sans's metrics, the widest of
// the common sans-serif faces, and the SVG lists narrower fallbacks after it (diagrams/svg):
// whatever face draws the text, it fits the box dot made for it.
const dotStyle = "\tnodesep=0.6;\n\tranksep=1.8;\n" + dotFonts

const dotFonts = "\tnode [fontname=\"" + LayoutFont + "\", fontsize=14];\n" +
	"\tedge [fontname=\"" + LayoutFont + "\", fontsize=11];\n"

// LayoutFont is the font dot lays the diagrams out with (dotStyle).
const LayoutFont = "DejaVu Sans"

func dotCell(text string) string { return `<TD ALIGN="LEFT">` + text + `</TD>` }

// dotLabels replaces the trigger ids on each edge line of g ("\tFrom -> To [label=<...>];")
// with the EdgeLabel of the row they stand for. A label depends on the row, not only on its
// cause (a failed LIST in Listing waits to go on in Listing, in Relisting in Relisting), so the
// edge line's From picks the rows. Each row must appear as exactly one cell of its edge's line:
// counting before replacing catches a ToGraph format change instead of emitting ids silently.
func dotLabels(g string) (string, error) {
	lines := strings.SplitAfter(g, "\n")
	seen := 0
	for i, l := range lines {
		head, _, ok := strings.Cut(strings.TrimSpace(l), " [label=")
		fromName, toName, isEdge := strings.Cut(head, " -> ")
		if !ok || !isEdge {
			continue
		}
		var from, to fsm.State
		if from.UnmarshalText([]byte(fromName)) != nil || to.UnmarshalText([]byte(toName)) != nil {
			continue // the start arrow, from a node that is no state
		}
		var pairs []string
		for _, row := range transitions.Table.Rows() {
			if row.From != from || row.To != to {
				continue
			}
			cell := dotCell(html.EscapeString(row.Cause.String()))
			if n := strings.Count(l, cell); n != 1 {
				return "", fmt.Errorf("diagrams: stateless ToGraph prints cause %q %d times on edge %s, the table has one row for it", row.Cause, n, head)
			}
			pairs = append(pairs, cell, dotCell(html.EscapeString(EdgeLabel(row))))
			seen++
		}
		// One pass over the line, so a label can never be rewritten as if it were another id.
		lines[i] = strings.NewReplacer(pairs...).Replace(l)
	}
	if seen != len(transitions.Table.Rows()) {
		return "", fmt.Errorf("diagrams: stateless ToGraph draws %d of the table's %d rows", seen, len(transitions.Table.Rows()))
	}
	return strings.Join(lines, ""), nil
}
