package diagrams

import (
	"fmt"
	"strings"

	"github.com/rewatch/rewatch/fsm"
)

// Mermaid renders fsm.Table as a Mermaid stateDiagram-v2: one edge per table row, in table
// order, labelled with the cause's human label.
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
	for _, row := range fsm.Table {
		fmt.Fprintf(&b, "    %s --> %s : %s\n", row.From, row.To, mermaidText(row.Cause.Label()))
	}
	fmt.Fprintf(&b, "    %s --> [*]\n", fsm.Stopped)
	// A multi-line note, because a one-line note ends at the first ':' of its text.
	fmt.Fprintf(&b, "    note right of %s\n", fsm.Backoff)
	b.WriteString("        Waits on a timer (Retry-After or the next backoff step),\n")
	b.WriteString("        then retries what failed. Only a stop cuts the wait short.\n")
	b.WriteString("    end note\n")
	return b.String()
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
