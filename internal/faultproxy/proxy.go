// Package faultproxy is a reverse proxy for the Kubernetes API that injects
// scripted faults (error responses, ERROR events inside live watch streams,
// connection resets, truncated frames, delays, requests held until released)
// and records every request, so an end-to-end test against a real API server
// can provoke an exact failure and assert what the client did next.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Config says where the proxy forwards to.
type Config struct {
	// Upstream is the base URL of the API server, e.g. https://127.0.0.1:6443.
	Upstream string
	// Transport carries requests upstream; it is where TLS and the bearer
	// token live (e.g. from rest.TransportFor). nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// ForceJSON rewrites Accept on GETs to application/json, so that every
	// response is JSON whatever the client asked for. Faults are injected in
	// JSON and protobuf streams alike; this is for tests that want one format.
	ForceJSON bool
}

// Proxy is a running fault-injecting proxy on a loopback port.
type Proxy struct {
	upstream  *url.URL
	transport http.RoundTripper
	forceJSON bool

	ln     net.Listener
	srv    *http.Server
	ctx    context.Context // cancelled by Close; ends every relayed request
	cancel context.CancelFunc
	wg     sync.WaitGroup // handlers in flight, including hijacked ones

	mu      sync.Mutex
	rules   []*Handle
	records []*Record
	closed  bool
}

// New starts a proxy listening on 127.0.0.1 with plain HTTP toward the
// client.
func New(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: upstream %q: %w", cfg.Upstream, err)
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream %q: need scheme and host", cfg.Upstream)
	}
	rt := cfg.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		upstream:  u,
		transport: rt,
		forceJSON: cfg.ForceJSON,
		ln:        ln,
		ctx:       ctx,
		cancel:    cancel,
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is the proxy's base URL (http://127.0.0.1:port).
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// AddRule appends a rule; it applies to requests that arrive from now on.
func (p *Proxy) AddRule(r Rule) *Handle {
	h := &Handle{rule: r, p: p}
	p.mu.Lock()
	p.rules = append(p.rules, h)
	p.mu.Unlock()
	return h
}

// Counts is the number of LIST and WATCH requests seen since the last Reset.
func (p *Proxy) Counts() (lists, watches int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.records {
		switch r.Kind {
		case List:
			lists++
		case Watch:
			watches++
		}
	}
	return lists, watches
}

// Requests returns a copy of every request recorded since the last Reset,
// in arrival order.
func (p *Proxy) Requests() []Record {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Record, len(p.records))
	for i, r := range p.records {
		out[i] = *r
		out[i].Query = url.Values(maps.Clone(r.Query))
	}
	return out
}

// Reset forgets the recorded requests, so a test can count from a point
// (say, after the initial sync). Rules stay.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.records = nil
	p.mu.Unlock()
}

// ClearRules removes every rule; streams already open keep their faults.
func (p *Proxy) ClearRules() {
	p.mu.Lock()
	p.rules = nil
	p.mu.Unlock()
}

// Close ends every stream and connection and waits for all handlers to
// return.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	// Close (not Shutdown): open watches never become idle on their own.
	_ = p.srv.Close()
	p.wg.Wait()
}

// begin records a request and picks the fault that applies to it. The rule
// chosen is only reserved: the firing counts once the fault reaches the
// client (firing.deliver), and is given back if it never does.
func (p *Proxy) begin(r *http.Request) *firing {
	q := r.URL.Query()
	rec := &Record{
		Kind:            classify(r),
		Method:          r.Method,
		Path:            r.URL.Path,
		ResourceVersion: q.Get("resourceVersion"),
		Query:           q,
		Time:            time.Now(),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.records = append(p.records, rec)
	fr := &firing{p: p, rec: rec}
	for _, h := range p.rules {
		if h.offer(rec.Kind, rec.Path) && fr.h == nil {
			fr.h = h
		}
	}
	if fr.h != nil {
		fr.h.pending++
		fr.Fault = fr.h.rule.Fault
	}
	return fr
}

// firing is one request's fault, from the moment its rule was chosen to the
// moment it reached the client or the request ended without it.
type firing struct {
	Fault
	p       *Proxy
	h       *Handle
	rec     *Record
	settled bool
}

// deliver counts the fault as fired: it has reached the client.
func (fr *firing) deliver() { fr.settle(true, "") }

// skip gives the rule's turn back and notes why on the record.
func (fr *firing) skip(why string) { fr.settle(false, why) }

// release gives the rule's turn back if the fault was never delivered (the
// stream ended before its After* conditions, or the client went away).
func (fr *firing) release() { fr.settle(false, "") }

func (fr *firing) settle(delivered bool, why string) {
	if fr.h == nil || fr.settled {
		return
	}
	fr.settled = true
	fr.p.update(func() {
		fr.h.pending--
		switch {
		case delivered:
			fr.h.fired++
			fr.rec.Fault = fr.Fault.String()
		case why != "":
			fr.rec.Fault = fr.Fault.String() + " (" + why + ")"
		}
	})
}

// update changes a record under the lock so Requests never sees a torn one.
func (p *Proxy) update(fn func()) {
	p.mu.Lock()
	fn()
	p.mu.Unlock()
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		abort(w, false)
		return
	}
	// Added under the lock that Close takes before Wait, so Add never races
	// with a Wait at zero.
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	f := p.begin(r)
	defer f.release()
	rec := f.rec

	switch f.act {
	case actRespond:
		st := statusOf(f.err)
		for k, vs := range f.header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		// In the format the server would have answered in, so a protobuf client
		// reads a protobuf Status.
		enc := negotiated(r.Header.Get("Accept"))
		w.Header().Set("Content-Type", enc.contentType)
		w.WriteHeader(int(st.Code))
		_, _ = w.Write(enc.status(st))
		p.update(func() { rec.Status = int(st.Code) })
		f.deliver()
		return
	case actRefuse:
		f.deliver()
		abort(w, true)
		return
	case actPark:
		select {
		case <-f.gate:
			f.release() // released before it came: untouched
		default:
			f.deliver()
			select {
			case <-f.gate:
			case <-r.Context().Done(): // the client gave up, or the proxy closed
				return
			}
		}
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out := p.outgoing(ctx, r)
	if f.act == actCorruptContinue {
		if q := out.URL.Query(); q.Get("continue") != "" {
			q.Set("continue", corruptToken)
			out.URL.RawQuery = q.Encode()
			f.deliver()
		}
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		// What a client sees when the server's own upstream is unreachable.
		http.Error(w, fmt.Sprintf("faultproxy: upstream: %v", err), http.StatusBadGateway)
		p.update(func() { rec.Status = http.StatusBadGateway })
		return
	}
	defer resp.Body.Close()

	if f.act == actDelay {
		t := time.NewTimer(f.delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		f.deliver()
	}

	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	p.update(func() { rec.Status = resp.StatusCode })

	if rec.Kind == Watch && resp.StatusCode == http.StatusOK {
		enc, ok := encodingOf(resp.Header.Get("Content-Type"))
		if !ok {
			// Frame boundaries are unknown (CBOR, say): relay the bytes
			// untouched rather than cut the stream at an arbitrary point.
			if f.act != actPass && f.act != actDelay && f.act != actPark {
				f.skip("skipped: not a JSON or protobuf stream; see Config.ForceJSON")
			}
			relayBody(ctx, w, resp, nil)
			return
		}
		p.relayWatch(ctx, w, resp, f, enc)
		return
	}
	relayBody(ctx, w, resp, f)
}

// outgoing builds the upstream request: same method, path, query, headers
// and body, aimed at the upstream base URL.
func (p *Proxy) outgoing(ctx context.Context, r *http.Request) *http.Request {
	out := r.Clone(ctx)
	out.RequestURI = ""
	u := *p.upstream
	u.Path = strings.TrimSuffix(p.upstream.Path, "/") + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	out.URL = &u
	out.Host = u.Host
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	// Frame-level injection needs plain JSON: the API server gzips watch streams for a client
	// that accepts it. Without the header, the upstream transport negotiates and decompresses
	// compression itself, and the client gets the stream uncompressed.
	out.Header.Del("Accept-Encoding")
	if p.forceJSON && r.Method == http.MethodGet {
		out.Header.Set("Accept", jsonOnly(r.Header.Get("Accept")))
	}
	return out
}

// jsonOnly is the Accept header a forced-JSON request is sent with: plain JSON, after the
// server-side printed Tables accept asks for (`application/json;as=Table;v=v1;g=meta.k8s.io`,
// kubectl's and rewatch watch's), which are JSON too. Any other conversion (a metadata-only
// request) is dropped, as before: the object comes back whole, in JSON.
func jsonOnly(accept string) string {
	var kept []string
	for _, part := range strings.Split(accept, ",") {
		part = strings.TrimSpace(part)
		mt, params, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), "application/json") && strings.Contains(strings.ReplaceAll(params, " ", ""), "as=Table") {
			kept = append(kept, part)
		}
	}
	return strings.Join(append(kept, "application/json"), ", ")
}

// hopHeaders belong to one connection and must not be forwarded (RFC 9110
// section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
}

// relayBody copies a non-watch response, applying Reset, Truncate or Stall
// (f nil: none).
func relayBody(ctx context.Context, w http.ResponseWriter, resp *http.Response, f *firing) {
	act := actPass
	if f != nil {
		act = f.act
	}
	switch act {
	case actReset:
		flush(w)
		f.deliver()
		abort(w, true)
		return
	case actTruncate:
		// The whole body is needed to know where its middle is; LIST
		// responses in tests are small.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		_, _ = w.Write(b[:len(b)/2])
		flush(w)
		f.deliver()
		abort(w, false)
		return
	case actStall:
		flush(w)
		f.deliver()
		<-ctx.Done()
		return
	case actStallMidBody:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		_, _ = w.Write(b[:len(b)/2])
		flush(w)
		f.deliver()
		<-ctx.Done()
		return
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			flush(w)
		}
		if err != nil {
			return
		}
	}
}

func flush(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
}

// abort takes the connection away from net/http and closes it, so the
// client sees a broken connection rather than the end of a response. With
// rst the close sends a TCP RST instead of a FIN.
func abort(w http.ResponseWriter, rst bool) {
	conn, bufrw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): ErrAbortHandler makes net/http reset the
		// stream instead.
		panic(http.ErrAbortHandler)
	}
	_ = bufrw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
