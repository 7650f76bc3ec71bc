// Package clockx is the clock every wait in rewatch goes through.
//
// The driver and the retry helpers never call time.Sleep or time.After
// directly: they wait on a Clock, so that production code can be stopped at
// once through a context and tests can move time by hand. The interface is
// deliberately small (Now, Since, NewTimer) so that both
// github.com/benbjohnson/clock, the implementation rewatch uses, and
// k8s.io/utils/clock, what client-go uses, fit behind it.
//
// Mock exists because benbjohnson/clock's mock loses timers armed by another
// goroutine while the test is advancing time. Here arming a timer and
// advancing time take the same lock, and WaitForTimers lets a test wait, without
// polling, until the code under test has armed the timers it expects before
// calling Add.
package clockx
