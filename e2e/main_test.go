package e2e

import (
	"os"
	"testing"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
)

func TestMain(m *testing.M) {
	apiserver.MainUnlessOptedIn("the e2e tests (real kube-apiserver, etcd, HAProxy and the simulator through the fault proxy)")
	code := m.Run()
	printResults()
	shared.Stop()
	sharedCBOR.Stop()
	stopSharedHA()
	// Every reflector was stopped and every proxy closed: nothing of ours may be left.
	os.Exit(testbackend.CheckLeaks(code))
}
