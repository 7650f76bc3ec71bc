package e2e

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	printResults()
	shared.Stop()
	if code == 0 {
		// Every reflector was stopped and every proxy closed: nothing of ours may be left.
		// The HTTP clients of the test's own client-go calls keep idle connections.
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/util/wait.BackoffUntil"),
		); err != nil {
			os.Stderr.WriteString("goroutine leak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
