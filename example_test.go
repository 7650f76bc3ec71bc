package rewatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/sim"
)

// A reflector keeps a store in sync with the configmaps of a namespace: New checks the
// configuration, Run lists, watches and re-watches until its context ends, HasSynced (or
// OnTransition) says when the first full state is in the store, and Stats says what it cost.
// Here the server is rewatch's in-process simulator; against a cluster, FromRESTConfig builds
// the Connection from a client-go rest.Config.
func Example() {
	server := sim.New(sim.Options{})
	url, err := server.Start()
	if err != nil {
		panic(err)
	}
	defer server.Close()
	for _, name := range []string{"a", "b", "c"} {
		if _, err := server.Create(sim.ConfigMaps, "default", name, map[string]string{"k": "v"}); err != nil {
			panic(err)
		}
	}

	synced, deleted := make(chan struct{}), make(chan struct{})
	store := driver.NewMemStore()
	r, err := rewatch.New(rewatch.Config{
		Connection: rewatch.Connection{
			Client: &http.Client{}, Server: url,
			Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"},
		},
		Store:  store,
		Logger: slog.New(slog.DiscardHandler),
		OnTransition: func(t driver.Transition) {
			switch {
			case t.Cause == fsm.CauseListComplete:
				close(synced)
			case t.Cause == fsm.CauseWatchEvent && t.Event.Type == fsm.Deleted:
				close(deleted)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	<-synced
	fmt.Println("synced:", r.HasSynced(), "objects:", store.Len())
	if _, err := server.Delete(sim.ConfigMaps, "default", "b"); err != nil {
		panic(err)
	}
	<-deleted
	fmt.Println("after a delete:", store.Len())

	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	st := r.Stats()
	fmt.Printf("lists=%d watches=%d retries=%d state=%s\n", st.Lists, st.Watches, len(st.Retries), st.State)
	// Output:
	// synced: true objects: 3
	// after a delete: 2
	// lists=1 watches=1 retries=0 state=Stopped
}
