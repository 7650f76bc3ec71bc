package testbackend

import (
	"os"

	"go.uber.org/goleak"
)

// clientGoGoroutines are goroutines that client-go itself leaves behind in an e2e test's
// process: idle connections of the test's own HTTP clients, and klog's flush daemon.
var clientGoGoroutines = []goleak.Option{
	goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntil"),
}

// CheckLeaks turns a passing run's exit code into a failing one when goroutines of ours were
// left running after every test stopped what it started; extra ignores the caller's own
// libraries' background goroutines.
func CheckLeaks(code int, extra ...goleak.Option) int {
	if code != 0 {
		return code
	}
	if err := goleak.Find(append(append([]goleak.Option{}, clientGoGoroutines...), extra...)...); err != nil {
		os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
		return 1
	}
	return code
}
