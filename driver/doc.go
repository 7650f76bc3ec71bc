// Package driver connects the pure reflector core to the world. It performs the commands that
// transitions.Machine.Step returns — a LIST page or a watch through its Transport, a timer on its
// Clock, a change to its Store — and feeds what comes back to the machine as typed events. It
// decides nothing: every branch on what a failure means lives in package transitions, and how a
// request reaches the server lives in a transport (transport/httpapi, transport/listwatch).
//
// One goroutine runs the loop; at most one request goroutine reads a LIST response or a watch
// stream at a time. Cancelling the context stops the machine, aborts the request and the timer,
// and returns only when nothing is left running. Observers (the journal, the façade's stats)
// hear of every transition after its commands have run.
package driver
