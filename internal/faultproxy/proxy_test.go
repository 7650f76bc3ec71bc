package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const listBody = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"9"}}]}`

// upstream is a fake API server: a fixed LIST, and watches that send
// `burst` events at once and then one more event per value on more, until a
// value on end ends the stream as the server's timeout would.
type upstream struct {
	srv      *httptest.Server
	requests atomic.Int32
	burst    int
	more     chan struct{}
	end      chan struct{}
	accept   chan string
}

func newUpstream(t *testing.T, burst int) *upstream {
	u := &upstream{burst: burst, more: make(chan struct{}), end: make(chan struct{}), accept: make(chan string, 100)}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		u.accept <- r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "" {
			_, _ = io.WriteString(w, listBody)
			return
		}
		// The real server sends the watch's headers before any event.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		rv := 10
		send := func() bool {
			rv++
			_, err := fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm%d","resourceVersion":"%d"}}}`+"\n", rv, rv)
			w.(http.Flusher).Flush()
			return err == nil
		}
		for range u.burst {
			if !send() {
				return
			}
		}
		for {
			select {
			case <-u.more:
				if !send() {
					return
				}
			case <-u.end:
				return
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func newProxy(t *testing.T, u *upstream, forceJSON bool) (*Proxy, *http.Client) {
	t.Helper()
	tr := &http.Transport{}
	p, err := New(Config{Upstream: u.srv.URL, Transport: tr, ForceJSON: forceJSON})
	require.NoError(t, err)
	ctr := &http.Transport{}
	t.Cleanup(func() {
		p.Close()
		tr.CloseIdleConnections()
		ctr.CloseIdleConnections()
	})
	return p, &http.Client{Transport: ctr, Timeout: 10 * time.Second}
}

type event struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

func openWatch(t *testing.T, c *http.Client, p *Proxy, rv string) (*http.Response, *json.Decoder) {
	t.Helper()
	resp, err := c.Get(p.URL() + "/api/v1/configmaps?watch=1&resourceVersion=" + rv)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp, json.NewDecoder(resp.Body)
}

func next(t *testing.T, dec *json.Decoder) event {
	t.Helper()
	var ev event
	require.NoError(t, dec.Decode(&ev))
	return ev
}

func statusFrom(t *testing.T, raw []byte) error {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.Unmarshal(raw, &st))
	assert.Equal(t, "Status", st.Kind)
	assert.Equal(t, "v1", st.APIVersion)
	return &apierrors.StatusError{ErrStatus: st}
}

func TestPassthroughRecordsListAndWatch(t *testing.T) {
	u := newUpstream(t, 2)
	p, c := newProxy(t, u, false)

	resp, err := c.Get(p.URL() + "/api/v1/configmaps?resourceVersion=0&limit=500")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, listBody, string(body))

	_, dec := openWatch(t, c, p, "10")
	assert.Equal(t, "ADDED", next(t, dec).Type)
	assert.Equal(t, "ADDED", next(t, dec).Type)

	lists, watches := p.Counts()
	assert.Equal(t, 1, lists)
	assert.Equal(t, 1, watches)
	recs := p.Requests()
	require.Len(t, recs, 2)
	assert.Equal(t, List, recs[0].Kind)
	assert.Equal(t, "0", recs[0].ResourceVersion)
	assert.Equal(t, "500", recs[0].Query.Get("limit"))
	assert.Equal(t, http.StatusOK, recs[0].Status)
	assert.Equal(t, Watch, recs[1].Kind)
	assert.Equal(t, "10", recs[1].ResourceVersion)
	assert.Equal(t, "/api/v1/configmaps", recs[1].Path)
	assert.Empty(t, recs[1].Fault)
	assert.Eventually(t, func() bool { return p.Requests()[1].Events == 2 }, 5*time.Second, time.Millisecond)

	p.Reset()
	lists, watches = p.Counts()
	assert.Zero(t, lists+watches)
}

func TestResetKeepsRulesAndClearRulesDropsThem(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: List, Times: -1, Fault: Respond(InternalError())})
	get := func() int {
		resp, err := c.Get(p.URL() + "/api/v1/configmaps")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 500, get())
	p.Reset()
	assert.Empty(t, p.Requests())
	assert.Equal(t, 500, get())
	p.ClearRules()
	assert.Equal(t, 200, get())
	lists, _ := p.Counts()
	assert.Equal(t, 2, lists)
}

func TestWatchFramesAreFlushedOneByOne(t *testing.T) {
	u := newUpstream(t, 1)
	p, c := newProxy(t, u, false)
	_, dec := openWatch(t, c, p, "10")
	// The upstream holds its second event until the first has reached the
	// client, so a buffering proxy would deadlock here.
	assert.Equal(t, "ADDED", next(t, dec).Type)
	u.more <- struct{}{}
	assert.Equal(t, "ADDED", next(t, dec).Type)
}

func TestRespondWithStatus(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		name   string
		fault  Fault
		code   int
		is     func(error) bool
		header string
		after  int32
	}{
		{"429 Retry-After header only", Respond(TooManyRequests(0)).WithHeader("Retry-After", "2"), 429, apierrors.IsTooManyRequests, "2", 0},
		{"429 details only", Respond(TooManyRequests(3)), 429, apierrors.IsTooManyRequests, "", 3},
		{"429 both", Respond(TooManyRequests(4)).WithHeader("Retry-After", "4"), 429, apierrors.IsTooManyRequests, "4", 4},
		{"500", Respond(InternalError()), 500, apierrors.IsInternalError, "", 0},
		{"410", Respond(Expired()), 410, apierrors.IsResourceExpired, "", 0},
		{"403", Respond(Forbidden(gr)), 403, apierrors.IsForbidden, "", 0},
		{"404", Respond(NotFound(gr)), 404, apierrors.IsNotFound, "", 0},
		{"504 too large RV", Respond(TooLargeResourceVersion(100, 50)), 504, func(err error) bool {
			return apierrors.IsTimeout(err) && apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
		}, "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, 0)
			p, c := newProxy(t, u, false)
			h := p.AddRule(Rule{Kind: Watch, Fault: tc.fault})
			resp, err := c.Get(p.URL() + "/api/v1/configmaps?watch=true&resourceVersion=5")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode)
			assert.Equal(t, tc.header, resp.Header.Get("Retry-After"))
			err = statusFrom(t, body)
			assert.True(t, tc.is(err), "%v", err)
			secs, _ := apierrors.SuggestsClientDelay(err)
			assert.Equal(t, int(tc.after), secs)
			assert.Zero(t, u.requests.Load(), "a Respond fault must not reach upstream")
			assert.Equal(t, 1, h.Fired())
			assert.Equal(t, tc.code, p.Requests()[0].Status)
			assert.NotEmpty(t, p.Requests()[0].Fault)
		})
	}
}

func TestRuleNthTimesAndPath(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	h := p.AddRule(Rule{Kind: List, Nth: 2, Times: 2, Fault: Respond(InternalError())})
	other := p.AddRule(Rule{Kind: Any, PathContains: "/secrets", Times: -1, Fault: Respond(Forbidden(schema.GroupResource{Resource: "secrets"}))})

	var codes []int
	for range 4 {
		resp, err := c.Get(p.URL() + "/api/v1/configmaps")
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 500, 500, 200}, codes)
	assert.Equal(t, 2, h.Fired())

	for range 3 {
		resp, err := c.Get(p.URL() + "/api/v1/namespaces/x/secrets")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 403, resp.StatusCode)
	}
	assert.Equal(t, 3, other.Fired())
	// The secrets LISTs were matched by the first rule too (it counts every
	// LIST), but it had used up its two firings.
	assert.Equal(t, 2, h.Fired())
}

func TestWatchErrorEventAfterEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *apierrors.StatusError
		is   func(error) bool
		secs int
	}{
		{"429 with retryAfterSeconds", TooManyRequests(7), apierrors.IsTooManyRequests, 7},
		{"429 bare", TooManyRequests(0), apierrors.IsTooManyRequests, 0},
		{"500", InternalError(), apierrors.IsInternalError, 0},
		{"410", Expired(), apierrors.IsResourceExpired, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, 5)
			p, c := newProxy(t, u, false)
			p.AddRule(Rule{Kind: Watch, Fault: WatchError(tc.err).AfterEvents(2)})
			resp, dec := openWatch(t, c, p, "10")
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "ADDED", next(t, dec).Type)
			assert.Equal(t, "ADDED", next(t, dec).Type)
			ev := next(t, dec)
			require.Equal(t, "ERROR", ev.Type)
			err := statusFrom(t, ev.Object)
			assert.True(t, tc.is(err), "%v", err)
			secs, _ := apierrors.SuggestsClientDelay(err)
			assert.Equal(t, tc.secs, secs)
			// The stream ends cleanly after the ERROR event.
			assert.ErrorIs(t, dec.Decode(&ev), io.EOF)
			assert.Equal(t, 2, p.Requests()[0].Events)
		})
	}
}

func TestWatchErrorAfterDelayOnQuietStream(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: Watch, Fault: WatchError(InternalError()).AfterDelay(30 * time.Millisecond)})
	start := time.Now()
	_, dec := openWatch(t, c, p, "10")
	ev := next(t, dec)
	assert.Equal(t, "ERROR", ev.Type)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestResetMidStream(t *testing.T) {
	u := newUpstream(t, 5)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: Watch, Fault: Reset().AfterEvents(2)})
	_, dec := openWatch(t, c, p, "10")
	next(t, dec)
	next(t, dec)
	var ev event
	err := dec.Decode(&ev)
	require.Error(t, err)
	assert.NotErrorIs(t, err, io.EOF, "a reset must not look like a clean end of stream")
	assert.Equal(t, "reset after 2 events", p.Requests()[0].Fault)
}

// A stream fault counts as fired when it reaches the client. A watch that
// ends before the fault's After* conditions never saw it: the rule is not
// spent, and the next watch gets the fault.
func TestRuleFiresWhenDelivered(t *testing.T) {
	u := newUpstream(t, 1)
	p, c := newProxy(t, u, false)
	h := p.AddRule(Rule{Kind: Watch, Fault: Reset().AfterEvents(2)})

	_, dec := openWatch(t, c, p, "10")
	next(t, dec)
	assert.Zero(t, h.Fired(), "chosen, not yet delivered")
	u.end <- struct{}{} // the server ends the stream before the second event
	var ev event
	require.ErrorIs(t, dec.Decode(&ev), io.EOF, "the stream ended cleanly, without the fault")
	require.Eventually(t, func() bool { return len(p.Requests()) == 1 && p.Requests()[0].Status == 200 }, 5*time.Second, time.Millisecond)
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return h.pending == 0
	}, 5*time.Second, time.Millisecond, "the turn is given back when the handler ends")
	assert.Zero(t, h.Fired())
	assert.Empty(t, p.Requests()[0].Fault, "nothing was applied to the first watch")

	_, dec = openWatch(t, c, p, "11")
	next(t, dec)
	u.more <- struct{}{}
	next(t, dec)
	require.Error(t, dec.Decode(&ev), "the second watch gets the reset")
	assert.Equal(t, 1, h.Fired())
	assert.Equal(t, "reset after 2 events", p.Requests()[1].Fault)
}

// A stall keeps the stream open and relays nothing more, whatever the
// server sends, until the client gives up.
func TestStallKeepsStreamOpenAndSilent(t *testing.T) {
	u := newUpstream(t, 1)
	p, _ := newProxy(t, u, false)
	h := p.AddRule(Rule{Kind: Watch, Fault: Stall().AfterEvents(1)})
	ctr := &http.Transport{}
	t.Cleanup(ctr.CloseIdleConnections)
	c := &http.Client{Transport: ctr} // no timeout: only the stall may hold the read
	resp, dec := openWatch(t, c, p, "10")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ADDED", next(t, dec).Type)
	require.Eventually(t, func() bool { return h.Fired() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "stall after 1 events", p.Requests()[0].Fault)

	read := make(chan error, 1)
	go func() {
		var ev event
		read <- dec.Decode(&ev)
	}()
	u.more <- struct{}{} // the server goes on; the proxy relays nothing of it
	select {
	case err := <-read:
		t.Fatalf("a stalled stream delivered something: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	resp.Body.Close() // the client gives up
	require.Error(t, <-read)
	assert.Equal(t, 1, p.Requests()[0].Events, "the frame after the stall was not relayed")
}

func TestResetOnListAfterHeaders(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: List, Fault: Reset()})
	resp, err := c.Get(p.URL() + "/api/v1/configmaps")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	assert.Error(t, err)
}

func TestTruncateWatchFrame(t *testing.T) {
	u := newUpstream(t, 5)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: Watch, Fault: Truncate().AfterEvents(1)})
	_, dec := openWatch(t, c, p, "10")
	next(t, dec)
	var ev event
	err := dec.Decode(&ev)
	require.Error(t, err)
	assert.NotErrorIs(t, err, io.EOF)
}

func TestTruncateList(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: List, Fault: Truncate()})
	resp, err := c.Get(p.URL() + "/api/v1/configmaps")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, listBody[:len(listBody)/2], string(body))
}

func TestRefuse(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: Watch, Fault: Refuse()})
	_, err := c.Get(p.URL() + "/api/v1/configmaps?watch=1")
	require.Error(t, err)
	assert.Zero(t, u.requests.Load())
	assert.Zero(t, p.Requests()[0].Status)
	// The next watch goes through.
	resp, dec := openWatch(t, c, p, "10")
	assert.Equal(t, 200, resp.StatusCode)
	u.more <- struct{}{}
	next(t, dec)
}

func TestDelay(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: List, Fault: Delay(50 * time.Millisecond)})
	start := time.Now()
	resp, err := c.Get(p.URL() + "/api/v1/configmaps")
	require.NoError(t, err)
	resp.Body.Close()
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	assert.Equal(t, 200, resp.StatusCode)
}

func TestUnframedWatchIsRelayedUntouched(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte{0, 0, 0, 3, 'a', 'b', 'c'})
	}))
	t.Cleanup(up.Close)
	tr := &http.Transport{}
	p, err := New(Config{Upstream: up.URL, Transport: tr})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(); tr.CloseIdleConnections() })
	p.AddRule(Rule{Kind: Watch, Fault: WatchError(InternalError())})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(p.URL() + "/api/v1/pods?watch=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 3, 'a', 'b', 'c'}, body)
	assert.Contains(t, p.Requests()[0].Fault, "skipped")
}

// With ForceJSON the proxy asks the server for JSON whatever the client accepts. A
// server-side printed Table, as kubectl asks for it, is JSON too: it is kept, before plain
// JSON; the rest goes.
func TestForceJSONRewritesAccept(t *testing.T) {
	for name, tc := range map[string]struct{ accept, sent string }{
		"protobuf or JSON": {"application/vnd.kubernetes.protobuf,application/json", "application/json"},
		"a Table": {"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
			"application/json;as=Table;v=v1;g=meta.k8s.io, application/json"},
	} {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t, 0)
			p, c := newProxy(t, u, true)
			req, _ := http.NewRequest(http.MethodGet, p.URL()+"/api/v1/configmaps", nil)
			req.Header.Set("Accept", tc.accept)
			resp, err := c.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.sent, <-u.accept)
		})
	}
}

func TestCloseEndsOpenStreams(t *testing.T) {
	u := newUpstream(t, 1)
	p, c := newProxy(t, u, false)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		_, dec := openWatch(t, c, p, "10")
		next(t, dec)
		wg.Go(func() {
			var ev event
			errs <- dec.Decode(&ev)
		})
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.Error(t, err)
	}
	// Requests after Close fail instead of hanging.
	_, err := c.Get(p.URL() + "/api/v1/configmaps")
	assert.Error(t, err)
}

func TestConcurrentUse(t *testing.T) {
	u := newUpstream(t, 1)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: Watch, Times: -1, Fault: WatchError(TooManyRequests(1)).AfterEvents(1)})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				resp, err := c.Get(p.URL() + "/api/v1/configmaps?watch=1")
				if err != nil {
					t.Error(err)
					return
				}
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
				}
				resp.Body.Close()
				_ = p.Requests()
				_, _ = p.Counts()
			}
		})
	}
	wg.Wait()
	_, watches := p.Counts()
	assert.Equal(t, 40, watches)
}

func TestNewRejectsBadUpstream(t *testing.T) {
	for _, up := range []string{"127.0.0.1:80", "localhost", "http://"} {
		_, err := New(Config{Upstream: up})
		assert.Error(t, err, up)
	}
}

// In a protobuf watch the proxy finds frames as apimachinery's length-delimited framer writes
// them, relays them intact, and injects its ERROR event in protobuf: a WatchEvent whose object
// is a Status with its envelope, which apimachinery decodes as the server's own.
func TestProtobufWatchFaults(t *testing.T) {
	frame := func(typ string, raw []byte) []byte {
		b, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}).Marshal()
		require.NoError(t, err)
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	first, second := frame("ADDED", []byte("one")), frame("MODIFIED", []byte("two"))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		time.Sleep(50 * time.Millisecond)
		_, _ = w.Write(second)
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	tr := &http.Transport{}
	p, err := New(Config{Upstream: up.URL, Transport: tr})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(); tr.CloseIdleConnections() })
	p.AddRule(Rule{Kind: Watch, Fault: WatchError(TooManyRequests(2)).AfterEvents(1)})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(p.URL() + "/api/v1/configmaps?watch=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(body, first), "the first frame is relayed intact")
	rest := body[len(first):]
	require.GreaterOrEqual(t, len(rest), 4)
	n := binary.BigEndian.Uint32(rest)
	require.Len(t, rest, int(4+n), "exactly one more frame, whole")
	var we metav1.WatchEvent
	require.NoError(t, we.Unmarshal(rest[4:]))
	require.Equal(t, "ERROR", we.Type)
	st := decodeProtobufStatus(t, we.Object.Raw)
	require.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason)
	require.Equal(t, int32(2), st.Details.RetryAfterSeconds)
	require.Equal(t, 1, p.Requests()[0].Events)
}

// A response fault answers in the format the client asked for first, as the server does.
func TestRespondInTheNegotiatedFormat(t *testing.T) {
	u := newUpstream(t, 0)
	p, c := newProxy(t, u, false)
	p.AddRule(Rule{Kind: List, Times: 2, Fault: Respond(TooManyRequests(3))})
	for accept, want := range map[string]string{
		"application/vnd.kubernetes.protobuf, application/json": "application/vnd.kubernetes.protobuf",
		"application/json": "application/json",
	} {
		req, _ := http.NewRequest(http.MethodGet, p.URL()+"/api/v1/configmaps", nil)
		req.Header.Set("Accept", accept)
		resp, err := c.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, want, resp.Header.Get("Content-Type"))
		var st metav1.Status
		if want == "application/json" {
			require.NoError(t, json.Unmarshal(body, &st))
		} else {
			st = decodeProtobufStatus(t, body)
		}
		require.Equal(t, int32(3), st.Details.RetryAfterSeconds)
	}
}

func decodeProtobufStatus(t *testing.T, raw []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	obj, _, err := protobuf.NewSerializer(statusScheme, statusScheme).Decode(raw, nil, &st)
	require.NoError(t, err)
	require.Same(t, &st, obj)
	return st
}

// In a CBOR watch (a CBOR sequence) the proxy relays each item whole and injects its ERROR
// event in CBOR, which apimachinery's CBOR serializer decodes as the server's own.
func TestCBORWatchFaults(t *testing.T) {
	info := cborSerializers
	item := func(typ string) []byte {
		var obj, b bytes.Buffer
		require.NoError(t, info.Serializer.Encode(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "demo.rewatch.dev/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}}, &obj))
		require.NoError(t, info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj.Bytes()}}, &b))
		return b.Bytes()
	}
	first := item("ADDED")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/cbor-seq")
		_, _ = w.Write(first)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(up.Close)
	tr := &http.Transport{}
	p, err := New(Config{Upstream: up.URL, Transport: tr})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(); tr.CloseIdleConnections() })
	p.AddRule(Rule{Kind: Watch, Fault: WatchError(Expired()).AfterEvents(1)})
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(p.URL() + "/apis/demo.rewatch.dev/v1/widgets?watch=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(body, first), "the first item is relayed intact: %x\n%x", first, body)
	var we metav1.WatchEvent
	_, _, err = info.StreamSerializer.Serializer.Decode(body[len(first):], nil, &we)
	require.NoError(t, err)
	require.Equal(t, "ERROR", we.Type)
	var st metav1.Status
	_, _, err = info.Serializer.Decode(we.Object.Raw, nil, &st)
	require.NoError(t, err)
	require.Equal(t, metav1.StatusReasonExpired, st.Reason)
}

// CorruptContinue reaches upstream with an unreadable token, only on a
// continuation page: a first page passes untouched and does not spend it.
func TestCorruptContinue(t *testing.T) {
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.URL.Query().Get("continue"))
		mu.Unlock()
		_, _ = io.WriteString(w, listBody)
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{Upstream: srv.URL})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	h := p.AddRule(Rule{Kind: List, Fault: CorruptContinue()})
	for _, q := range []string{"limit=1", "limit=1&continue=abc", "limit=1&continue=abc"} {
		resp, err := http.Get(p.URL() + "/api/v1/configmaps?" + q)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"", corruptToken, "abc"}, tokens)
	assert.Equal(t, 1, h.Fired())
	assert.Equal(t, "corrupt continue token", p.Requests()[1].Fault)
}

// A parked request reaches the server only once released; one whose client
// gave up never does; one that comes after the release passes untouched.
func TestParkHoldsUntilRelease(t *testing.T) {
	u := newUpstream(t, 1)
	p, _ := newProxy(t, u, false)
	release := make(chan struct{})
	h := p.AddRule(Rule{Kind: Watch, Times: -1, Fault: Park(release)})
	ctr := &http.Transport{}
	t.Cleanup(ctr.CloseIdleConnections)
	c := &http.Client{Transport: ctr} // no timeout: only the park may hold the request

	// A client that gives up while parked: nothing reaches the server.
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/configmaps?watch=1&resourceVersion=10", nil)
	require.NoError(t, err)
	gaveUp := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return h.Fired() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.Error(t, <-gaveUp)

	// A watch parked, then released: the server answers it then.
	opened := make(chan *json.Decoder, 1)
	go func() {
		resp, err := c.Get(p.URL() + "/api/v1/configmaps?watch=1&resourceVersion=11")
		if !assert.NoError(t, err) {
			opened <- nil
			return
		}
		t.Cleanup(func() { resp.Body.Close() })
		opened <- json.NewDecoder(resp.Body)
	}()
	require.Eventually(t, func() bool { return h.Fired() == 2 }, 5*time.Second, time.Millisecond)
	select {
	case <-opened:
		t.Fatal("a parked watch was answered before its release")
	case <-time.After(200 * time.Millisecond):
	}
	assert.Zero(t, u.requests.Load(), "nothing parked reached the server")
	close(release)
	dec := <-opened
	require.NotNil(t, dec)
	assert.Equal(t, "ADDED", next(t, dec).Type)
	assert.Equal(t, int32(1), u.requests.Load())

	// After the release a request passes untouched.
	_, dec = openWatch(t, c, p, "12")
	assert.Equal(t, "ADDED", next(t, dec).Type)
	assert.Equal(t, 2, h.Fired())
	recs := p.Requests()
	require.Len(t, recs, 3)
	assert.Equal(t, "park", recs[0].Fault)
	assert.Zero(t, recs[0].Status, "the client that gave up got no response")
	assert.Equal(t, "park", recs[1].Fault)
	assert.Equal(t, http.StatusOK, recs[1].Status)
	assert.Empty(t, recs[2].Fault)
}
