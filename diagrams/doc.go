// Package diagrams renders transitions.Table, the reflector's one transition table, as a Mermaid
// stateDiagram-v2 (which GitHub draws inline) and as DOT (the qmuntal/stateless graph of the
// machine built from the table). The SVG rendering of that DOT is in the diagrams/svg module,
// so that its Graphviz runtime stays out of the library's module graph.
//
// The rendered files in docs/ are committed so they can be read without running anything; a
// test fails when they no longer match the table.
package diagrams

//go:generate go run ./svg/cmd/gen -out ../docs -readme ../README.md -cli ../cmd/rewatch/rendered
