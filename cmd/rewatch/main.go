// Command rewatch watches a Kubernetes resource with the rewatch reflector, runs a self-contained
// demo against a simulated API server, replays journals and draws the state machine.
// See docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
