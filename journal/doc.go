// Package journal records the reflector's event log as JSON lines and replays it.
//
// The machine's state is the fold of its events, so a journal recorded in production replays in
// a test to the identical sequence of states and commands. The first line is a header with the
// machine's configuration (including the jitter seed); every further line is one event with the
// transition it caused and the commands it produced. Objects are recorded only as their keys,
// unless full capture is asked for. The format is documented in docs/journal.md.
package journal
