package clockx

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Mock is a deterministic Clock for tests. Time moves only through Add and
// Set. Every operation, including arming a timer from another goroutine,
// happens under one mutex, so a timer is either armed before an Add (and
// fires if due) or after it (and counts from the new time): it cannot be lost
// in between, which is the race benbjohnson/clock's mock has.
type Mock struct {
	mu    sync.Mutex
	now   time.Time
	seq   uint64 // arming order, to break ties between equal deadlines
	armed []*mockTimer
	// changed is closed and replaced whenever the set of armed timers
	// changes, so WaitForTimers can block on it alongside a context, which
	// a sync.Cond cannot do.
	changed chan struct{}
}

// NewMock returns a Mock whose time is start.
func NewMock(start time.Time) *Mock {
	return &Mock{now: start, changed: make(chan struct{})}
}

// Now returns the mock's current time.
func (m *Mock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Since returns the mock time elapsed since t.
func (m *Mock) Since(t time.Time) time.Duration { return m.Now().Sub(t) }

// NewTimer arms a timer that fires once the mock has been advanced by d. As
// with time.NewTimer, d <= 0 delivers at once.
func (m *Mock) NewTimer(d time.Duration) Timer {
	t := &mockTimer{m: m, c: make(chan time.Time, 1)}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.arm(t, d)
	return t
}

// Add advances the mock by d, firing every timer due by then in deadline
// order (arming order among equal deadlines). While a timer fires, Now
// reports its deadline.
func (m *Mock) Add(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceTo(m.now.Add(d))
}

// Set moves the mock to t. Moving forward fires due timers as Add does;
// moving backward fires nothing and leaves deadlines where they are.
func (m *Mock) Set(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceTo(t)
}

// Armed reports how many timers are armed: neither fired nor stopped.
func (m *Mock) Armed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.armed)
}

// ArmedDurations returns how long each armed timer still has to run, sorted
// ascending, so a test can assert the exact wait the code under test chose.
func (m *Mock) ArmedDurations() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]time.Duration, len(m.armed))
	for i, t := range m.armed {
		out[i] = t.deadline.Sub(m.now)
	}
	slices.Sort(out)
	return out
}

// WaitForTimers blocks until at least n timers are armed or ctx is done.
// Tests call it before Add so that they advance time only once the code
// under test is actually waiting.
func (m *Mock) WaitForTimers(ctx context.Context, n int) error {
	for {
		m.mu.Lock()
		if len(m.armed) >= n {
			m.mu.Unlock()
			return nil
		}
		changed := m.changed
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// advanceTo fires due timers one at a time in order; m.mu must be held.
func (m *Mock) advanceTo(end time.Time) {
	for {
		i := m.nextDue(end)
		if i < 0 {
			break
		}
		t := m.armed[i]
		m.now = t.deadline
		m.disarm(i)
		t.deliver(t.deadline)
	}
	m.now = end
}

// nextDue returns the index of the earliest armed timer due by end, or -1.
func (m *Mock) nextDue(end time.Time) int {
	best := -1
	for i, t := range m.armed {
		if t.deadline.After(end) {
			continue
		}
		if best < 0 || t.before(m.armed[best]) {
			best = i
		}
	}
	return best
}

// arm (re)starts t to fire d from now; m.mu must be held.
func (m *Mock) arm(t *mockTimer, d time.Duration) {
	t.deadline = m.now.Add(d)
	m.seq++
	t.seq = m.seq
	if d <= 0 {
		t.deliver(m.now)
		return
	}
	t.armed = true
	m.armed = append(m.armed, t)
	m.notify()
}

// disarm removes the i-th armed timer; m.mu must be held.
func (m *Mock) disarm(i int) {
	m.armed[i].armed = false
	m.armed = slices.Delete(m.armed, i, i+1)
	m.notify()
}

func (m *Mock) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

type mockTimer struct {
	m        *Mock
	c        chan time.Time
	deadline time.Time
	seq      uint64
	armed    bool
}

func (t *mockTimer) before(o *mockTimer) bool {
	if !t.deadline.Equal(o.deadline) {
		return t.deadline.Before(o.deadline)
	}
	return t.seq < o.seq
}

// deliver never blocks: the channel holds one value, like time.Timer's did
// before Go 1.23, and Stop/Reset drain it, like time.Timer's does since.
func (t *mockTimer) deliver(now time.Time) {
	select {
	case t.c <- now:
	default:
	}
}

func (t *mockTimer) C() <-chan time.Time { return t.c }

// Stop disarms the timer and reports whether it was armed. A value delivered
// but not yet received is discarded, so no stale tick is seen after Stop.
func (t *mockTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.unarm()
	t.drain()
	return was
}

// Reset re-arms the timer d from the mock's now and reports whether it was
// armed before. Like Stop, it discards an undelivered stale value.
func (t *mockTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.unarm()
	t.drain()
	t.m.arm(t, d)
	return was
}

// unarm takes t off the armed list if it is on it; m.mu must be held.
func (t *mockTimer) unarm() bool {
	if !t.armed {
		return false
	}
	t.m.disarm(slices.Index(t.m.armed, t))
	return true
}

func (t *mockTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}
