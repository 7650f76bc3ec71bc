// Package transitions decides everything the reflector does. Machine.Step is a pure function
// from (snapshot, event) to (snapshot, commands): it reads no clock (time arrives in events),
// performs no I/O, starts no goroutine and uses no global randomness (jitter comes from the
// seeded source inside the snapshot). Replaying the same events from the same initial snapshot
// therefore yields the same snapshots and commands, which is what makes journals replayable.
//
// Each event is first read as an fsm.Cause (the edge label); transitions.Table alone says whether the
// current state admits it (no row: the event is ignored), where it leads and, for a wait, where
// the wait goes on; then the cause's effects produce the commands.
package transitions
