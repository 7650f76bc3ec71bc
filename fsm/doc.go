// Package fsm is the vocabulary of the rewatch reflector: its states, the typed events it
// consumes, the typed commands it emits, the snapshot of everything it remembers, and the one
// declarative transition table from which the stateless machine, the diagrams and the property
// tests are all derived.
//
// Nothing here decides anything: decisions live in package transitions. Nothing here performs
// I/O or reads a clock: time arrives as a field of every event.
package fsm
