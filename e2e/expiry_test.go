package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/transitions"
)

// docs/semantics.md "Behind a load balancer": a long-running kube-apiserver whose watch cache
// has moved past the resume RV answers the resume with the words a young watch cache uses, "too
// old resource version: RV (OLDEST)", but only of an RV the reflector reached more than 75 s
// ago. That is an ordinary 410: the reflector relists at once, with no re-watch on a fresh
// connection first — one WATCH answered 410, then one LIST at the last RV, and no WATCH between
// them (before the RV's age was read, every such 410 cost a second WATCH).
//
// How the real server comes to answer so (k8s.io/apiserver v0.37.2, pkg/storage/cacher):
//   - The watch cache's history (watch_cache_history.go) starts with room for 100 events
//     (defaultLowerBoundCapacity) and grows to at most 100×1024. On each new event, when it is
//     full: if its oldest event is younger than eventFreshDuration (DefaultEventFreshDuration,
//     the 60 s bookmark frequency + 15 s = 75 s) its room doubles; else, if the event a quarter
//     of the room back from the newest is older than 75 s, its room halves, keeping the newest
//     events; and if it is still full the oldest event is evicted. So below the upper bound no
//     event younger than 75 s is ever evicted, and an older one only once newer events fill
//     the room: time alone evicts nothing.
//   - A watch from RV is answered "too old resource version: RV (OLDEST-1)" (410, reason
//     Expired) when RV < OLDEST−1, OLDEST being the oldest event held once any was evicted
//     (GetIntervalLocked); cacher.Watch sends it as an ERROR event on a watch that opened (200).
//
// So the test holds the reflector's re-watches off through the proxy (the stream is reset after
// one event, and every re-watch parked), writes a ConfigMap at once (the first event after the
// RV, so that any event the RV's successor names is as old as the hold), waits 75 s (and a
// margin) after it, then writes until the server itself answers a watch from the RV with that
// 410 — at most the cache's room in writes, since every event it then holds from before the RV
// is older than 75 s — and only then lets the parked re-watch through.
func TestOrdinaryExpiryRelistsWithoutAnExtraWatch(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 3)
	e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Reset().AfterEvents(1)})
	release := make(chan struct{})
	park := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Nth: 2, Times: -1, Fault: faultproxy.Park(release)})
	e.start(nil) // the defaults, ResumeRVLifetime 60 s among them
	e.converged()

	ctx := context.Background()
	require.NoError(t, b.Put(ctx, configMaps, e.ns, "obj-0", "last-seen")) // the stream's one event
	require.True(t, waitFor(30*time.Second, func() bool { return park.Fired() >= 1 }), "the re-watch was never parked:\n%s", e.describe())
	rv := e.requests(faultproxy.Watch)[1].ResourceVersion // the resume RV: the reflector's last
	require.NotEmpty(t, rv)
	require.NoError(t, b.Put(ctx, configMaps, e.ns, "obj-1", "after"))
	after := time.Now()

	// The reflector is held; the 75 s run while the package's sequential tests do (a top-level
	// parallel test goes on once they are done). Run alone, it waits them here.
	t.Parallel()

	// The events from before the RV and the first after it must be older than 75 s before newer
	// ones can evict them.
	const eventFresh, margin = 75 * time.Second, 5 * time.Second
	time.Sleep(time.Until(after.Add(eventFresh + margin)))
	var gone *metav1.Status
	writes := 0
	for {
		st, err := watchFromOnServer(ctx, b, e.ns, rv)
		require.NoError(t, err)
		if st != nil {
			gone = st
			break
		}
		// The cache's room is at most a few thousand events in this package's runs; 20,000
		// writes past the 75 s are a cache that does not evict as the facts above say.
		require.Less(t, writes, 20000, "the watch cache still holds RV %s", rv)
		for range 25 {
			require.NoError(t, b.Put(ctx, configMaps, e.ns, fmt.Sprintf("obj-%d", writes%3), strconv.Itoa(writes)))
			writes++
		}
	}
	require.EqualValues(t, 410, gone.Code, "the server's answer to a watch from %s: %+v", rv, gone)
	asked, oldest, ok := (&fsm.Failure{Status: gone}).WatchCacheTooOld()
	require.True(t, ok, "the watch cache's wording: %q", gone.Message)
	require.Equal(t, rv, strconv.FormatUint(asked, 10))
	require.Greater(t, oldest, asked)

	close(release)
	expired := e.waitCause(fsm.CauseExpired)
	require.NoError(t, b.Put(ctx, configMaps, e.ns, "obj-2", "after-relist"))
	e.converged()

	// The requests that reached the server since the hold: the parked re-watch, answered 410,
	// then the relist, then its watch. Re-watches the reflector gave up while parked (its
	// silence bound, 150 s, on a long hold) reached nothing: status 0.
	reachedServer := func() []faultproxy.Record {
		var out []faultproxy.Record
		reset := false
		for _, r := range e.proxy.Requests() {
			if reset && (r.Kind == faultproxy.List || r.Kind == faultproxy.Watch) && r.Status != 0 {
				out = append(out, r)
			}
			reset = reset || r.Fault == "reset after 1 events"
		}
		return out
	}
	require.True(t, waitFor(30*time.Second, func() bool { return len(reachedServer()) >= 3 }), e.describe())
	reached := reachedServer()
	require.Len(t, reached, 3, "one WATCH answered 410, one LIST, one WATCH:\n%s", e.describe())
	require.Equal(t, faultproxy.Watch, reached[0].Kind)
	require.Equal(t, rv, reached[0].ResourceVersion)
	require.Equal(t, faultproxy.List, reached[1].Kind, "no second WATCH before the relist:\n%s", e.describe())
	require.Equal(t, rv, reached[1].ResourceVersion, "relist at the last RV")
	require.Equal(t, "NotOlderThan", reached[1].Query.Get("resourceVersionMatch"))
	require.Equal(t, faultproxy.Watch, reached[2].Kind)

	// The cause the reflector gave: an ordinary 410, read as the server's watch-cache wording
	// of an RV older than ResumeRVLifetime.
	asked, oldest, ok = expired.Event.Failure.WatchCacheTooOld()
	require.True(t, ok)
	require.Equal(t, rv, strconv.FormatUint(asked, 10))
	require.Greater(t, oldest, asked)
	age := expired.Event.Now.Sub(expired.Snapshot.RVAdvancedAt)
	require.GreaterOrEqual(t, age, transitions.DefaultResumeRVLifetime, "the RV's age is what tells this 410 from a young cache's")
	e.mu.Lock()
	var causes []fsm.Cause
	for _, tr := range e.trans {
		switch tr.Cause {
		case fsm.CauseExpired, fsm.CauseExpiredAgain, fsm.CauseExpiredYoungCache:
			causes = append(causes, tr.Cause)
		}
	}
	e.mu.Unlock()
	require.Equal(t, []fsm.Cause{fsm.CauseExpired}, causes, "one ordinary 410, no re-watch for a young cache:\n%s", e.describe())
	e.report("ordinary 410 from a long-running watch cache", fmt.Sprintf("RV %s gone after %d writes, held %v: 1 LIST at the last RV, 0 extra WATCH", rv, writes, age.Round(time.Second)))
}

// watchFromOnServer opens a watch of ns's configmaps from rv on the server itself, not through
// a proxy, and returns the Status of the ERROR event it begins with, or nil when it begins with
// an event (ns has one after rv): the watch cache still holds rv.
func watchFromOnServer(ctx context.Context, b backend, ns, rv string) (*metav1.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL()+"/api/v1/namespaces/"+ns+"/configmaps?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: b.Transport()}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("watch from %s: %s", rv, resp.Status)
	}
	var ev metav1.WatchEvent
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil {
		return nil, fmt.Errorf("watch from %s: %w", rv, err)
	}
	if ev.Type != "ERROR" {
		return nil, nil
	}
	var st metav1.Status
	if err := json.Unmarshal(ev.Object.Raw, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
