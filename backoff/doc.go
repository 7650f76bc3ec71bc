// Package backoff holds the Backoff value shared by the reflector's pure
// state machine and the retry helpers.
//
// Backoff has exactly the semantics of apimachinery's wait.Backoff, so users
// can hand in what they already have (FromWait) and get client-go's delays.
// What it adds is a pure form: Delay computes the delay of any attempt from
// the attempt number and one random number, with no mutation, allocation or
// hidden randomness, which is what an event-sourced state machine needs to
// replay a journal to identical waits. SplitMix64 is the small value-type
// random source such a machine can carry in its snapshot.
//
// This package sits under the pure core, so it imports only the standard
// library and wait (for the conversions).
package backoff
