package bench

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Meter is an http.RoundTripper that counts what a reflector asks of the server, from the
// client side, so it measures all three reflectors the same way: LIST requests and the bytes
// of their responses, WATCH requests, watch-list (sendInitialEvents) requests and their
// bytes, and the times at which a watch opened or failed.
type Meter struct {
	Base http.RoundTripper

	mu             sync.Mutex
	lists, watches int
	listOps        int // LIST requests without a continue token: whole lists, not pages
	probes         int // LIST requests with limit=1: a consistent read of the server's RV, no state
	watchLists     int
	listBytes      int64
	watchListBytes int64
	watchBytes     int64   // the bodies of watches but watch-lists: the event streams
	tooMany        int     // responses with 429 Too Many Requests
	opens, fails   []int64 // unix nanos
	requests       []int64 // unix nanos: when each LIST, watch-list or WATCH request was sent
	stopping       atomic.Bool

	// Log keeps a record of every GET (RequestRecord): a member's timeline, what it asked and
	// what it was answered, for either kind of reflector alike.
	Log     bool
	records []RequestRecord
}

// RequestRecord is one GET a Meter with Log saw: when it was sent, what it was (LIST, a
// continuation page LIST-PAGE, WATCH, WATCHLIST), the status code (0: no response) and when
// its body ended (a watch: when its stream ended; 0 while it is open).
type RequestRecord struct {
	At    int64  `json:"at"`
	Kind  string `json:"kind"`
	Code  int    `json:"code"`
	End   int64  `json:"end,omitempty"`
	Retry string `json:"retryAfter,omitempty"`
}

// MeterCounts is a snapshot of a Meter.
type MeterCounts struct {
	Lists, ListOps, Watches, WatchLists int
	// Probes are LISTs of one item (limit=1), left out of ListOps: the consistent read a
	// start from a persisted cache makes to learn the server's resourceVersion.
	Probes                    int
	TooMany                   int
	ListBytes, WatchListBytes int64
	// WatchBytes are the bytes of the watch streams (watch-lists left out).
	WatchBytes   int64
	Opens, Fails []int64
	Requests     []int64
}

// Stop makes the meter ignore failures from now on (the reflector is being shut down).
func (m *Meter) Stop() { m.stopping.Store(true) }

// Counts returns a copy of the counts.
func (m *Meter) Counts() MeterCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MeterCounts{TooMany: m.tooMany, Lists: m.lists, ListOps: m.listOps, Probes: m.probes, Watches: m.watches, WatchLists: m.watchLists, ListBytes: m.listBytes,
		WatchListBytes: m.watchListBytes, WatchBytes: m.watchBytes, Opens: append([]int64(nil), m.opens...), Fails: append([]int64(nil), m.fails...),
		Requests: append([]int64(nil), m.requests...)}
}

func (m *Meter) fail() {
	if m.stopping.Load() {
		return
	}
	m.mu.Lock()
	m.fails = append(m.fails, time.Now().UnixNano())
	m.mu.Unlock()
}

func (m *Meter) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	w := q.Get("watch")
	isWatch := req.Method == http.MethodGet && (w == "1" || w == "true")
	isWatchList := isWatch && q.Get("sendInitialEvents") == "true"
	m.mu.Lock()
	rec := -1
	if req.Method == http.MethodGet {
		now := time.Now().UnixNano()
		m.requests = append(m.requests, now)
		if m.Log {
			kind := "LIST"
			switch {
			case isWatchList:
				kind = "WATCHLIST"
			case isWatch:
				kind = "WATCH"
			case q.Get("continue") != "":
				kind = "LIST-PAGE"
			}
			rec = len(m.records)
			m.records = append(m.records, RequestRecord{At: now, Kind: kind})
		}
	}
	switch {
	case isWatchList:
		m.watchLists++
	case isWatch:
		m.watches++
	case req.Method == http.MethodGet:
		m.lists++
		switch {
		case q.Get("limit") == "1":
			m.probes++
		case q.Get("continue") == "":
			m.listOps++
		}
	}
	m.mu.Unlock()
	base := m.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		if isWatch {
			m.fail()
		}
		m.ended(rec)
		return resp, err
	}
	m.mu.Lock()
	if resp.StatusCode == http.StatusTooManyRequests {
		m.tooMany++
	}
	if rec >= 0 {
		m.records[rec].Code, m.records[rec].Retry = resp.StatusCode, resp.Header.Get("Retry-After")
	}
	m.mu.Unlock()
	if rec >= 0 {
		resp.Body = &countingBody{rc: resp.Body, onEnd: func() { m.ended(rec) }}
	}
	switch {
	case isWatch:
		if resp.StatusCode != http.StatusOK {
			m.fail()
		} else {
			m.mu.Lock()
			m.opens = append(m.opens, time.Now().UnixNano())
			m.mu.Unlock()
		}
		b := &countingBody{rc: resp.Body, onEnd: m.fail}
		if isWatchList {
			b.add = func(n int) { m.mu.Lock(); m.watchListBytes += int64(n); m.mu.Unlock() }
		} else {
			b.add = func(n int) { m.mu.Lock(); m.watchBytes += int64(n); m.mu.Unlock() }
		}
		resp.Body = b
	case req.Method == http.MethodGet:
		resp.Body = &countingBody{rc: resp.Body, add: func(n int) { m.mu.Lock(); m.listBytes += int64(n); m.mu.Unlock() }}
	}
	return resp, nil
}

// ObjectStoreMeter is an http.RoundTripper that counts what a persisted cache asks of an
// object store: requests, the bytes of their bodies each way, and what became of the uploads.
type ObjectStoreMeter struct {
	Base                    http.RoundTripper
	requests, read, written atomic.Int64
	committed, refused      atomic.Int64
	aborted                 atomic.Int64
}

// ObjectStoreCounts is a snapshot of an ObjectStoreMeter.
type ObjectStoreCounts struct {
	Requests, BytesRead, BytesWritten int64
	// Committed counts the snapshots written (a PUT of a whole object, or a multipart upload's
	// completion, answered 2xx); Refused the writes refused for their condition (412, or AWS's
	// 409: another replica wrote first); Aborted the multipart uploads dropped.
	Committed, Refused, Aborted int64 `json:",omitzero"`
}

// Counts returns the counts so far.
func (m *ObjectStoreMeter) Counts() ObjectStoreCounts {
	return ObjectStoreCounts{Requests: m.requests.Load(), BytesRead: m.read.Load(), BytesWritten: m.written.Load(),
		Committed: m.committed.Load(), Refused: m.refused.Load(), Aborted: m.aborted.Load()}
}

// Sub is c less an earlier snapshot.
func (c ObjectStoreCounts) Sub(before ObjectStoreCounts) ObjectStoreCounts {
	return ObjectStoreCounts{Requests: c.Requests - before.Requests, BytesRead: c.BytesRead - before.BytesRead,
		BytesWritten: c.BytesWritten - before.BytesWritten, Committed: c.Committed - before.Committed,
		Refused: c.Refused - before.Refused, Aborted: c.Aborted - before.Aborted}
}

func (m *ObjectStoreMeter) RoundTrip(req *http.Request) (*http.Response, error) {
	m.requests.Add(1)
	if req.ContentLength > 0 {
		m.written.Add(req.ContentLength)
	}
	base := m.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	q := req.URL.Query()
	upload := q.Has("uploadId")
	whole := req.Method == http.MethodPut && !upload && req.Header.Get("X-Amz-Copy-Source") == ""
	completion := req.Method == http.MethodPost && upload
	switch {
	case (whole || completion) && (resp.StatusCode == http.StatusPreconditionFailed || resp.StatusCode == http.StatusConflict):
		m.refused.Add(1)
	case (whole || completion) && resp.StatusCode/100 == 2:
		// S3 may answer a completion 200 with an error in its body; SeaweedFS does not.
		m.committed.Add(1)
	case req.Method == http.MethodDelete && upload && resp.StatusCode/100 == 2:
		m.aborted.Add(1)
	}
	resp.Body = &countingBody{rc: resp.Body, add: func(n int) { m.read.Add(int64(n)) }}
	return resp, nil
}

// ended notes when record i's body ended.
func (m *Meter) ended(i int) {
	if i < 0 {
		return
	}
	m.mu.Lock()
	m.records[i].End = time.Now().UnixNano()
	m.mu.Unlock()
}

// Records returns a copy of the records kept with Log.
func (m *Meter) Records() []RequestRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]RequestRecord(nil), m.records...)
}

// countingBody counts bytes read and reports the end of the body (error, EOF, or a Close
// before either) once. A watch is closed from another goroutine than the one reading it
// (client-go's StreamWatcher.Stop), so the end is told once whichever comes first.
type countingBody struct {
	rc    io.ReadCloser
	add   func(int)
	onEnd func()
	ended sync.Once
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.add != nil {
		b.add(n)
	}
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *countingBody) end() {
	b.ended.Do(func() {
		if b.onEnd != nil {
			b.onEnd()
		}
	})
}

func (b *countingBody) Close() error {
	b.end()
	return b.rc.Close()
}
