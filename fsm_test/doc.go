// Package fsm_test holds the cross-package deterministic tests of the reflector core: property
// tests over random event sequences drawn from a model API server, golden transcripts that read
// like docs/semantics.md, and journal replay. It has no non-test code besides this comment.
package fsm_test
