package diagrams_test

import (
	"fmt"
	"strings"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Mermaid draws transitions.Table: every state, then one edge per row, labelled with its cause's Label
// (and, for a wait, the state it leads on to). GitHub renders it in Markdown; `rewatch diagram`
// prints it, DOT too.
func ExampleMermaid() {
	for _, line := range strings.Split(diagrams.Mermaid(), "\n") {
		if strings.Contains(line, "Watching --> Backoff") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// Watching --> Backoff : 429 / Retry-After (also 503, server timeout) ⇒ then Watching
	// Watching --> Backoff : InternalError within window ⇒ then Watching
	// Watching --> Backoff : refused / reset / EOF before open ⇒ then Watching
	// Watching --> Backoff : repeated quick stream ends ⇒ then Watching
	// Watching --> Backoff : 410 again without progress ⇒ then Relisting
	// Watching --> Backoff : too large RV → wait (Retry-After), LIST RV=#34;#34; ⇒ then Relisting
	// Watching --> Backoff : 401 / 403 / 404 / other, first → re-WATCH after backoff ⇒ then Watching
	// Watching --> Backoff : 401 / 403 / 404 / other, again ⇒ then Relisting
	// Watching --> Backoff : relist held back by a relist rule ⇒ then Relisting
	// Watching --> Backoff : the one kube-apiserver unreachable (refused, 502) → wait, LIST at last RV ⇒ then Relisting
}

// EdgeLabel is what the edge of one row says.
func ExampleEdgeLabel() {
	row, _ := transitions.Table.Lookup(fsm.Watching, fsm.CauseExpired)
	fmt.Println(diagrams.EdgeLabel(row))
	// Output: 410 Gone / Expired → LIST at last RV
}
