package rewatch

import (
	"sync"
	"time"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// Stats summarises a reflector's life: what it asked of the server and what it avoided.
type Stats struct {
	State fsm.State
	// LastResourceVersion is the last resourceVersion observed.
	LastResourceVersion string
	Synced              bool
	// Lists counts LIST operations (a paginated list counts once); ListPages counts requests.
	Lists, ListPages int
	Watches          int
	// Retries counts, by cause, every failure the reflector answered by trying again.
	Retries map[fsm.Cause]int
	// ListsAvoided counts watch failures answered by a re-watch where a relist-on-error
	// reflector would have listed everything again.
	ListsAvoided int
	// BackingOff is the time spent waiting on backoff timers.
	BackingOff time.Duration
	// WatchEvents counts ADDED/MODIFIED/DELETED/BOOKMARK frames.
	WatchEvents int
	// Objects is the store's size when the store can tell (-1 otherwise).
	Objects int
}

// rewatchCauses are failures a relist-on-error reflector would have answered with a LIST.
var rewatchCauses = map[fsm.Cause]bool{
	fsm.CauseTooManyRequests: true, fsm.CauseInternalErrorInWindow: true, fsm.CauseConnectFailed: true,
	fsm.CauseStreamEndedQuickly: true,
}

// retryCauses are the causes counted as retries.
var retryCauses = map[fsm.Cause]bool{
	fsm.CauseTooManyRequests: true, fsm.CauseInternalErrorInWindow: true, fsm.CauseInternalErrorPastWindow: true,
	fsm.CauseConnectFailed: true, fsm.CauseStreamEnded: true, fsm.CauseStreamEndedQuickly: true,
	fsm.CauseExpired: true, fsm.CauseExpiredAgain: true, fsm.CauseTooLargeRV: true, fsm.CauseWatchRejected: true,
	fsm.CauseListFailed: true, fsm.CauseListExpired: true, fsm.CauseContinueExpired: true,
	fsm.CauseInitialTransferCut: true, fsm.CauseWatchListUnsupported: true,
}

// counter folds transitions into Stats and forwards them to Metrics.
type counter struct {
	mu      sync.Mutex
	st      Stats
	metrics Metrics
	sizer   interface{ Len() int }

	armedAt     time.Time
	armedReason fsm.Cause
}

func newCounter(m Metrics, store Store) *counter {
	c := &counter{metrics: m, st: Stats{Retries: map[fsm.Cause]int{}, Objects: -1}}
	c.sizer, _ = store.(interface{ Len() int })
	return c
}

func (c *counter) observe(t driver.Transition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.st
	st.State, st.LastResourceVersion, st.Synced = t.To, t.Snapshot.LastRV, t.Snapshot.Synced
	if t.Event.Kind == fsm.EvWatchEvent && t.Cause == fsm.CauseWatchEvent {
		st.WatchEvents++
		if c.metrics != nil {
			c.metrics.WatchEvent(t.Event.Type)
		}
		return
	}
	if t.Cause == fsm.NoCause {
		return
	}
	if retryCauses[t.Cause] {
		st.Retries[t.Cause]++
	}
	if rewatchCauses[t.Cause] || t.Cause == fsm.CauseStreamEnded && t.Event.Failure != nil {
		st.ListsAvoided++
	}
	if !c.armedAt.IsZero() && (t.Cause == fsm.CauseRetryWatch || t.Cause == fsm.CauseRetryRelist ||
		t.Cause == fsm.CauseRetryList || t.Cause == fsm.CauseStop) {
		d := t.Event.Now.Sub(c.armedAt)
		st.BackingOff += d
		if c.metrics != nil {
			c.metrics.Waited(c.armedReason, d)
		}
		c.armedAt = time.Time{}
	}
	for _, cmd := range t.Commands {
		switch cmd.Kind {
		case fsm.CmdListPage:
			st.ListPages++
			if cmd.Continue == "" {
				st.Lists++
			}
			c.request("list")
		case fsm.CmdOpenWatch:
			st.Watches++
			c.request("watch")
		case fsm.CmdArmTimer:
			c.armedAt, c.armedReason = t.Event.Now, cmd.Reason
		}
	}
	if c.metrics != nil {
		c.metrics.Transition(t.From, t.To, t.Cause)
		if c.sizer != nil {
			c.metrics.Objects(c.sizer.Len())
		}
	}
}

func (c *counter) request(kind string) {
	if c.metrics != nil {
		c.metrics.Request(kind)
	}
}

func (c *counter) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.st
	out.Retries = make(map[fsm.Cause]int, len(c.st.Retries))
	for k, v := range c.st.Retries {
		out.Retries[k] = v
	}
	if c.sizer != nil {
		out.Objects = c.sizer.Len()
	}
	return out
}
