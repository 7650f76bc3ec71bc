package clockx

import (
	"context"
	"time"
)

// Clock is the narrow clock rewatch waits on.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	NewTimer(d time.Duration) Timer
}

// Timer mirrors *time.Timer behind an interface, so fakes can stand in.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Sleep waits d on c. It returns ctx.Err() as soon as ctx is done, having
// stopped its timer, so a cancelled wait leaves nothing armed behind it.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	// An already-cancelled caller must not get a nil back just because d is 0.
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := c.NewTimer(d)
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}
