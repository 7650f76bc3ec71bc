package diagrams

import (
	"fmt"
	"html"
	"strings"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// OverviewEdge is one edge of the overview: every row of transitions.Table from one state to another,
// said as the few things those rows mean.
type OverviewEdge struct {
	From, To fsm.State
	Meanings []string // distinct, in the order of the table's first row with each meaning
	Rows     []fsm.Transition
}

// Overview groups transitions.Table into one edge per pair of states, labelled by what its rows mean
// (Meaning), for a picture a reader takes in at a glance; the full diagram (DOT, Mermaid) keeps
// one label per row. Edges come in the order of each pair's first row.
func Overview() []OverviewEdge {
	var out []OverviewEdge
	index := map[[2]fsm.State]int{}
	for _, row := range transitions.Table.Rows() {
		k := [2]fsm.State{row.From, row.To}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, OverviewEdge{From: row.From, To: row.To})
		}
		e := &out[i]
		e.Rows = append(e.Rows, row)
		m := Meaning(row)
		if !contains(e.Meanings, m) {
			e.Meanings = append(e.Meanings, m)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Meaning is what a row means for the reflector, in the overview's words. It is read from
// where the row goes and the facts its cause declares (fsm.CauseFacts), not from a list of
// causes, so a new row falls into its group by itself; a row none of the groups describes
// keeps its own label.
func Meaning(row fsm.Transition) string {
	c := row.Cause
	facts := transitions.Table.Facts(c)
	listing := func(s fsm.State) bool { return s == fsm.Listing || s == fsm.Relisting }
	switch {
	case row.To == fsm.Stopped:
		return "stop"
	case row.From == fsm.Backoff:
		return transitions.Table.Label(c) // one timer row into each state: its own words
	case row.BeginsRelist() && row.To == fsm.Backoff:
		return "cannot resume, again → wait, relist"
	case row.BeginsRelist():
		return "cannot resume (410, too large RV, errors) → relist"
	case facts.HoldsRelist:
		return "relist held back (asked) → relist later"
	case row.From == fsm.Watching && row.To == fsm.Backoff && facts.AvoidsList.Avoids(false):
		return "transient (429, 5xx, reset, refused once) → wait, re-WATCH, no LIST"
	case row.From == fsm.Watching && row.To == fsm.Watching && facts.Retry:
		return "stream ended or fell silent → re-WATCH at once, no LIST"
	case row.From == fsm.Watching && row.To == fsm.Watching:
		return "events and bookmarks"
	case listing(row.From) && row.To == fsm.Backoff:
		return "LIST failed or refused → wait, retry"
	case listing(row.From) && row.To == row.From && facts.Retry:
		return "answer refused as asked → ask another way"
	case listing(row.From) && row.To == row.From:
		return "pages and items → stage"
	case listing(row.From) && row.To == fsm.Watching:
		return "complete → replace the store, WATCH"
	}
	return transitions.Table.Label(c)
}

// OverviewDOT renders Overview as DOT, in the full diagram's fonts and shapes, one line of its
// label per meaning. It runs top to bottom, where the full diagram runs left to right: with
// fewer, shorter labels that is the more compact picture, and left to right put the label of
// Relisting's own edge on its edge to Stopped (TestNoLabelOverlapsAnotherOrANode).
func OverviewDOT() string {
	var b strings.Builder
	b.WriteString(dotHeader)
	b.WriteString("digraph {\n\trankdir=\"TB\";\n\tnodesep=0.6;\n\tranksep=0.9;\n" + dotFonts + "\tnode [shape=Mrecord];\n")
	for _, s := range fsm.States() {
		attrs := ""
		if s == fsm.Stopped {
			attrs = ", penwidth=2"
		}
		fmt.Fprintf(&b, "\t%s [label=%q%s];\n", s, s.String(), attrs)
	}
	for _, e := range Overview() {
		var cells strings.Builder
		for _, m := range e.Meanings {
			cells.WriteString("<TR>" + dotCell(html.EscapeString(m)) + "</TR>")
		}
		fmt.Fprintf(&b, "\t%s -> %s [label=<<TABLE BORDER=\"0\">%s</TABLE>>];\n", e.From, e.To, cells.String())
	}
	fmt.Fprintf(&b, "\tinit [label=\"\", shape=point];\n\tinit -> %s\n}\n", initialState)
	return b.String()
}
