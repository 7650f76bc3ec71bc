// Package driver connects the pure reflector core to the world. It performs the commands that
// transitions.Machine.Step returns (GET a LIST page, GET a watch stream, arm a timer, change the
// store) and turns what comes back (pages, frames, Status bodies, Retry-After headers, transport
// errors, timers firing) into typed events. It decides nothing: every branch on what a failure
// means lives in package transitions.
//
// One goroutine runs the loop; at most one request goroutine reads a LIST response or a watch
// stream at a time. Cancelling the context stops the machine, aborts the request and the timer,
// and returns only when nothing is left running.
package driver
