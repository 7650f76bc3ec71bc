package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var configMaps = httpapi.Resource{Version: "v1", Resource: "configmaps"}

const oneItemList = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"9"}}]}`

// scripted serves a LIST that works and answers the n-th WATCH with watches[n] (the last one
// repeats), so each test scripts exactly the bytes a hostile server sends.
type scripted struct {
	lists, watches atomic.Int32
	list           func(w http.ResponseWriter)
	watch          []func(w http.ResponseWriter)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") == "" {
		n := s.lists.Add(1)
		if s.list != nil && n == 1 {
			s.list(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, oneItemList)
		return
	}
	n := int(s.watches.Add(1)) - 1
	s.watch[min(n, len(s.watch)-1)](w)
}

func frames(lines ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for _, l := range lines {
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
		}
	}
}

func hang(w http.ResponseWriter) {
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	time.Sleep(50 * time.Millisecond) // the reflector is stopped by then; the handler only lingers
}

type hostileRun struct {
	clock *clockx.Mock
	seen  chan driver.Transition
	stop  func()
}

func runAgainst(t *testing.T, h http.Handler, mod func(*httpapi.Config)) *hostileRun {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	r := &hostileRun{clock: clockx.NewMock(time.Unix(0, 0)), seen: make(chan driver.Transition, 1000)}
	hc := httpapi.Config{Client: &http.Client{}, Server: srv.URL, Resource: configMaps, Clock: r.clock}
	if mod != nil {
		mod(&hc)
	}
	transport, err := httpapi.New(hc)
	require.NoError(t, err)
	cfg := driver.Config{
		Transport: transport, Clock: r.clock, Checked: true,
		Observers: []driver.Observer{driver.ObserverFunc(func(tr driver.Transition) {
			tr.Commands = append([]fsm.Command(nil), tr.Commands...)
			r.seen <- tr
		})},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- driver.Run(ctx, cfg) }()
	r.stop = func() {
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(func() {
		if ctx.Err() == nil {
			r.stop()
		}
	})
	return r
}

// waitCause returns the first transition with cause c, failing after 10 s of real time.
// waitCause waits for a transition taken for one of causes.
func (r *hostileRun) waitCause(t *testing.T, causes ...fsm.Cause) driver.Transition {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tr := <-r.seen:
			if slices.Contains(causes, tr.Cause) {
				return tr
			}
		case <-deadline:
			t.Fatalf("no %v transition within 10s", causes)
		}
	}
}

func armed(tr driver.Transition) time.Duration {
	for _, c := range tr.Commands {
		if c.Kind == fsm.CmdArmTimer {
			return c.Delay
		}
	}
	return -1
}

// docs/semantics.md InternalError row, "(also a mid-stream decode failure)": bytes that are not a
// frame, an ERROR event without a Status, an unknown event type and an oversized frame each end
// the stream as an InternalError: re-watch with backoff inside the window, never a panic or stall.
func TestHostileWatchFrames(t *testing.T) {
	huge := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"big","namespace":"default","resourceVersion":"11"},"data":{"x":"` + strings.Repeat("x", 64<<10) + `"}}}`
	for name, watch := range map[string]func(http.ResponseWriter){
		"invalid JSON":           frames(`{"type":"ADDED","object":{nope}}`),
		"HTML in the stream":     frames(`<html><body>502 Bad Gateway</body></html>`),
		"ERROR with a ConfigMap": frames(`{"type":"ERROR","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}}}`),
		"unknown event type":     frames(`{"type":"EXPLODED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","resourceVersion":"11"}}}`),
		"object without kind":    frames(`{"type":"ADDED","object":{"metadata":{"name":"x"}}}`),
		"oversized frame":        frames(huge),
	} {
		t.Run(name, func(t *testing.T) {
			r := runAgainst(t, &scripted{watch: []func(http.ResponseWriter){watch, hang}}, func(c *httpapi.Config) { c.MaxFrameBytes = 16 << 10 })
			tr := r.waitCause(t, fsm.CauseInternalErrorInWindow)
			require.NotNil(t, tr.Event.Failure)
			require.NotEmpty(t, tr.Event.Failure.Message, "the log line must say what was wrong")
			require.Positive(t, armed(tr))
		})
	}
}

func TestHostileRetryAfter(t *testing.T) {
	for name, tc := range map[string]struct {
		header string
		want   func(d time.Duration) bool
	}{
		"a day is capped at 5 minutes": {"86400", func(d time.Duration) bool { return d == 5*time.Minute }},
		"negative is absent":           {"-5", func(d time.Duration) bool { return d >= 800*time.Millisecond && d < 1600*time.Millisecond }},
		"overflowing is absent":        {"99999999999999999999", func(d time.Duration) bool { return d < 1600*time.Millisecond }},
		"garbage is absent":            {"soon", func(d time.Duration) bool { return d < 1600*time.Millisecond }},
		"zero backs off anyway":        {"0", func(d time.Duration) bool { return d >= 800*time.Millisecond }},
		"an HTTP-date is honoured": {time.Unix(0, 0).Add(42 * time.Second).UTC().Format(http.TimeFormat),
			func(d time.Duration) bool { return d == 42*time.Second }},
	} {
		t.Run(name, func(t *testing.T) {
			tooMany := func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", tc.header)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`)
			}
			r := runAgainst(t, &scripted{watch: []func(http.ResponseWriter){tooMany, hang}}, nil)
			tr := r.waitCause(t, fsm.CauseServerBusy)
			require.True(t, tc.want(armed(tr)), "waited %v for Retry-After %q", armed(tr), tc.header)
		})
	}
}

func TestHostileListBodies(t *testing.T) {
	for name, list := range map[string]func(http.ResponseWriter){
		"HTML error page": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
		},
		"200 with garbage": func(w http.ResponseWriter) { fmt.Fprint(w, "this is not JSON") },
		"Status of an unknown reason": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(499)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NeverHeardOfIt","code":499}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := runAgainst(t, &scripted{list: list, watch: []func(http.ResponseWriter){hang}}, nil)
			// A 4xx Status of unknown reason is a refusal, the others are failures; both retry.
			tr := r.waitCause(t, fsm.CauseListFailed, fsm.CauseListRejected)
			require.NotEmpty(t, tr.Event.Failure.Message)
			require.Positive(t, armed(tr))
			require.NoError(t, r.clock.WaitForTimers(context.Background(), 1))
			r.clock.Add(armed(tr))
			r.waitCause(t, fsm.CauseListComplete)
		})
	}
}

// A LIST body that breaks off, grows past MaxListBytes, or holds an item that will not decode
// fails the LIST — the connection's own failure for a cut, TooLarge past the bound, a decode
// failure for the others — and the LIST is retried after a wait (a list too large to take
// whole at once, by pages); never a panic, never a page taken for complete.
func TestHostileStreamedListBodies(t *testing.T) {
	big := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[` +
		strings.Repeat(`{"metadata":{"name":"a","namespace":"default","resourceVersion":"9"},"data":{"k":"`+strings.Repeat("x", 1000)+`"}},`, 20) +
		`{"metadata":{"name":"b","namespace":"default","resourceVersion":"9"}}]}`
	for name, c := range map[string]struct {
		list      func(http.ResponseWriter)
		mod       func(*httpapi.Config)
		transport fsm.Transport
		message   string
		// paged: the failure is answered at once by a paged LIST, not after a wait.
		paged bool
	}{
		"cut midway": {list: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			fmt.Fprint(w, big[:len(big)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server drops the connection mid-body
		}, transport: fsm.EOF, message: "unexpected EOF"},
		"over MaxListBytes": {list: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, big)
		}, mod: func(c *httpapi.Config) { c.MaxListBytes = 4096 }, transport: fsm.TooLarge, message: "exceeds MaxListBytes (4096 bytes)", paged: true},
		"malformed item": {list: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"]}]}`)
		}, transport: fsm.Decode, message: `field "items": invalid character`},
	} {
		t.Run(name, func(t *testing.T) {
			r := runAgainst(t, &scripted{list: c.list, watch: []func(http.ResponseWriter){hang}}, c.mod)
			tr := r.waitCause(t, fsm.CauseListFailed, fsm.CauseWholeListRefused, fsm.CauseListComplete)
			require.Equal(t, c.transport, tr.Event.Failure.Transport)
			require.Contains(t, tr.Event.Failure.Message, c.message)
			if c.paged {
				require.Equal(t, fsm.CauseWholeListRefused, tr.Cause)
				next := tr.Commands[len(tr.Commands)-1]
				require.Equal(t, fsm.CmdListPage, next.Kind, "%v", tr.Commands)
				require.Equal(t, int64(500), next.Limit, "the next LIST pages: %v", tr.Commands)
				r.waitCause(t, fsm.CauseListComplete)
				return
			}
			require.Equal(t, fsm.CauseListFailed, tr.Cause)
			require.NoError(t, r.clock.WaitForTimers(context.Background(), 1))
			r.clock.Add(armed(tr))
			r.waitCause(t, fsm.CauseListComplete)
		})
	}
}
