package diagrams_test

import (
	"fmt"
	"strings"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Mermaid draws transitions.Table: every state, then one edge per row, labelled with its cause's
// Label (and, for a wait, the state it leads on to; see EdgeLabel), then notes. GitHub renders
// it in Markdown; `rewatch diagram` prints it, DOT too. Its opening declares the states, in
// table order, whatever rows they have.
func ExampleMermaid() {
	for _, line := range strings.Split(diagrams.Mermaid(), "\n")[:8] {
		fmt.Println(line)
	}
	// Output:
	// stateDiagram-v2
	//     %% Generated from fsm.Table by `go generate ./diagrams/`. Do not edit.
	//     Listing
	//     Watching
	//     Backoff
	//     Relisting
	//     Stopped
	//     [*] --> Listing
}

// EdgeLabel is what the edge of one row says.
func ExampleEdgeLabel() {
	row, _ := transitions.Table.Lookup(fsm.Watching, fsm.CauseExpired)
	fmt.Println(diagrams.EdgeLabel(row))
	// Output: 410 Gone / Expired → LIST at last RV
}
