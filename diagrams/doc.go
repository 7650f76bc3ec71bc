// Package diagrams renders fsm.Table, the reflector's one transition table, as a Mermaid
// stateDiagram-v2 (which GitHub draws inline), as DOT (the qmuntal/stateless graph of the
// machine built from the table) and as SVG (that DOT laid out by Graphviz compiled to wasm, so
// no system package is needed).
//
// The rendered files in docs/ are committed so they can be read without running anything; a
// test fails when they no longer match the table.
package diagrams

//go:generate go run ./cmd/gen -out ../docs -readme ../README.md
