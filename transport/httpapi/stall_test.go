package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// docs/semantics.md "A response that stops halfway": a LIST whose body stops coming halfway,
// the connection held open, fails as fsm.Stalled once it has waited ListProgressTimeout on the
// transport's clock, with the items it had read handed over before; one whose headers do not
// come fails the same way after ListHeadersTimeout.
func TestAStalledListFails(t *testing.T) {
	body := jsonPods(t, 20)
	for _, c := range []struct {
		name  string
		write func(w http.ResponseWriter)
		want  string
	}{
		{"body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
		}, "the LIST response's body made no progress for 30s"},
		{"headers", func(http.ResponseWriter) {}, "the LIST response's headers made no progress for 1m10s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.write(w)
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			defer close(release)
			clock := clockx.NewMock(time.Unix(1000, 0))
			tr, err := httpapi.New(httpapi.WithProgressClockForTest(httpapi.Config{Client: &http.Client{}, Server: srv.URL,
				Resource: httpapi.Resource{Version: "v1", Resource: "pods"}, Decoder: httpapi.Typed(scheme.Scheme), Format: httpapi.FormatJSON}, clock))
			require.NoError(t, err)
			events := make(chan fsm.Event, 64)
			firstItem := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				first := true
				tr.List(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 1}, func(e fsm.Event) bool {
					if first && e.Kind == fsm.EvListItem {
						first = false
						close(firstItem)
					}
					events <- e
					return true
				})
			}()
			if c.name == "body" {
				<-firstItem // the headers are in: what is waited for now is the body
			}
			// The guard's clock moves until the LIST has given up.
			func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
					if clock.WaitForTimers(ctx, 1) == nil {
						clock.Add(time.Second)
					}
					cancel()
				}
			}()
			close(events)
			var last fsm.Event
			items := 0
			for e := range events {
				if e.Kind == fsm.EvListItem {
					items++
				}
				last = e
			}
			require.Equal(t, fsm.EvListFailed, last.Kind)
			require.Equal(t, fsm.Stalled, last.Failure.Transport, "%s", last.Failure)
			require.Contains(t, last.Failure.Message, c.want)
			if c.name == "body" {
				require.NotZero(t, items, "the items read before the stall were handed over")
			}
		})
	}
}
