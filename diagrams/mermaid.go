package diagrams

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Mermaid renders transitions.Table as a Mermaid stateDiagram-v2: one edge per table row, in table
// order, labelled by EdgeLabel.
//
// Parallel edges are not merged: one edge per row keeps "every row is an edge" checkable by
// eye and by test, at the cost of a busier drawing around Listing and Relisting.
func Mermaid() string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	b.WriteString("    %% Generated from fsm.Table by `go generate ./diagrams/`. Do not edit.\n")
	// Declaring every state up front fixes their order in the source and keeps a state that
	// has lost all its rows visible instead of silently vanishing from the drawing.
	for _, s := range fsm.States() {
		fmt.Fprintf(&b, "    %s\n", s)
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", initialState)
	for _, row := range transitions.Table.Rows() {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", row.From, row.To, mermaidText(EdgeLabel(row)))
	}
	fmt.Fprintf(&b, "    %s --> [*]\n", fsm.Stopped)
	// Multi-line notes, because a one-line note ends at the first ':' of its text.
	for _, n := range notes {
		fmt.Fprintf(&b, "    note %s of %s\n", n.side, n.state)
		for _, l := range n.lines {
			fmt.Fprintf(&b, "        %s\n", l) // plain text: TestMermaidLabelsHoldNoSyntax
		}
		b.WriteString("    end note\n")
	}
	return b.String()
}

// notes say in the drawing what its edges cannot: what a wait remembers, and why Listing and
// Relisting, which take nearly the same edges, are two states — in the words of the table's
// own check (fsm.ListingAndRelisting), not again in other words.
var notes = []struct {
	side  string
	state fsm.State
	lines []string
}{
	{"right", fsm.Backoff, wrap("Waits on a timer (Retry-After or the next backoff step). "+
		"The edge in says where it goes on (⇒ then …), and the timer takes the edge out into "+
		"that state. Only a stop cuts the wait short.", noteWidth)},
	{"left", fsm.Listing, wrap("The first fill of an empty store, at RV 0.", noteWidth)},
	{"right", fsm.Relisting, wrap("Refills the synced store at the last RV after the watch "+
		"could not be resumed. The store serves the old state until Replace. "+fsm.ListingAndRelisting, noteWidth)},
}

// noteWidth is how wide a note's lines are, in characters.
const noteWidth = 56

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// EdgeLabel is what the edge of a table row says: its cause's label and, for a row into
// Backoff, the state the wait goes on in (the row's Then), so that a reader can follow a
// failure through Backoff to where it leads.
func EdgeLabel(row fsm.Transition) string {
	if row.To != fsm.Backoff {
		return transitions.Table.Label(row.Cause)
	}
	return transitions.Table.Label(row.Cause) + " ⇒ then " + row.Then.String()
}

// initialState is where every reflector starts; the table has no row into it from nowhere, so
// the diagrams add the [*] edge themselves.
const initialState = fsm.Listing

// mermaidEscaper replaces what Mermaid's state-diagram lexer reads as syntax inside a label
// (':' and ';' end or split the label, '"' and '<' '>' are taken for strings and HTML) with
// Mermaid's own entity codes, which it decodes back when drawing. '#' is escaped too, so a
// label that happens to contain "#58;" is drawn as written. Unicode such as '→' passes
// through: GitHub's Mermaid draws it as is.
var mermaidEscaper = strings.NewReplacer(
	"#", "#35;",
	":", "#58;",
	";", "#59;",
	`"`, "#34;",
	"<", "#60;",
	">", "#62;",
	"\n", " ",
)

func mermaidText(s string) string { return mermaidEscaper.Replace(s) }
