package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/retry"
)

// fakeServer stands in for the API server: it holds one object and, like a
// busy cluster, lets a concurrent writer win the first two updates.
type fakeServer struct {
	object         widget
	lostRacesAhead int
}

type widget struct {
	ResourceVersion int
	Replicas        int
}

func (s *fakeServer) Get() widget { return s.object }

func (s *fakeServer) Update(w widget) error {
	if s.lostRacesAhead > 0 {
		s.lostRacesAhead--
		s.object.ResourceVersion++ // someone else wrote first
	}
	if w.ResourceVersion != s.object.ResourceVersion {
		return apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w",
			errors.New("the object has been modified; please apply your changes to the latest version"))
	}
	w.ResourceVersion++
	s.object = w
	return nil
}

// A read-modify-write: fn re-reads the object on every attempt, so the
// retried update applies to the latest version.
func ExampleRetryOnConflict() {
	server := &fakeServer{object: widget{ResourceVersion: 1, Replicas: 1}, lostRacesAhead: 2}
	attempts := 0
	err := retry.RetryOnConflict(context.Background(), retry.DefaultRetry, func() error {
		attempts++
		w := server.Get()
		w.Replicas = 3
		return server.Update(w)
	}, retry.WithClock(newInstantClock())) // real code leaves out WithClock
	fmt.Println("err:", err)
	fmt.Println("attempts:", attempts)
	fmt.Printf("stored: %+v\n", server.Get())
	// Output:
	// err: <nil>
	// attempts: 3
	// stored: {ResourceVersion:4 Replicas:3}
}

func ExampleOnError() {
	errFlaky := errors.New("connection reset")
	clock := newInstantClock() // real code leaves out WithClock and WithRand
	calls := 0
	err := retry.OnError(context.Background(), retry.DefaultBackoff,
		func(err error) bool { return errors.Is(err, errFlaky) },
		func() error { calls++; return errFlaky },
		retry.WithClock(clock), retry.WithRand(fixedRand(0)))
	fmt.Println("err:", err)
	fmt.Println("calls:", calls)
	fmt.Println("waits:", clock.Waits())
	// Output:
	// err: connection reset
	// calls: 4
	// waits: [10ms 50ms 250ms]
}

func ExampleOnRetryAfterError() {
	clock := newInstantClock()
	calls := 0
	err := retry.OnRetryAfterError(context.Background(), retry.DefaultRetry, func() error {
		calls++
		if calls < 3 {
			return apierrors.NewTooManyRequests("too many requests", 2)
		}
		return nil
	}, retry.WithClock(clock), retry.WithRand(fixedRand(0)))
	fmt.Println("err:", err)
	fmt.Println("calls:", calls)
	fmt.Println("waits:", clock.Waits())
	// Output:
	// err: <nil>
	// calls: 3
	// waits: [2s 2s]
}

func ExampleParseRetryAfter() {
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 21 Oct 2015 07:28:00 GMT", "1.5", "-1", " 3 "} {
		d, ok := retry.ParseRetryAfter(v, now)
		fmt.Printf("%q: %v %v\n", v, d, ok)
	}
	// Output:
	// "120": 2m0s true
	// "Wed, 21 Oct 2015 07:28:00 GMT": 1m0s true
	// "1.5": 0s false
	// "-1": 0s false
	// " 3 ": 0s false
}

func ExampleFromResponse() {
	resp := &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"30"}}}
	d, ok := retry.FromResponse(resp, time.Now())
	fmt.Println(d, ok)
	// Output: 30s true
}

func ExampleFromError() {
	err := fmt.Errorf("list pods: %w", apierrors.NewTooManyRequests("slow down", 5))
	d, ok := retry.FromError(err)
	fmt.Println(d, ok)
	// Output: 5s true
}

func ExampleCap() {
	fmt.Println(retry.Cap(24*time.Hour, retry.DefaultRetryAfterCap))
	fmt.Println(retry.Cap(10*time.Second, retry.DefaultRetryAfterCap))
	// Output:
	// 5m0s
	// 10s
}

func ExampleReflectorBackoff() {
	b, resetAfter := retry.ReflectorBackoff()
	for attempt := range 8 {
		lo, hi := b.Bounds(attempt)
		fmt.Printf("attempt %d: [%v, %v)\n", attempt, lo, hi)
	}
	fmt.Println("reset after", resetAfter, "healthy")
	// Output:
	// attempt 0: [800ms, 1.6s)
	// attempt 1: [1.6s, 3.2s)
	// attempt 2: [3.2s, 6.4s)
	// attempt 3: [6.4s, 12.8s)
	// attempt 4: [12.8s, 25.6s)
	// attempt 5: [25.6s, 51.2s)
	// attempt 6: [30s, 1m0s)
	// attempt 7: [30s, 1m0s)
	// reset after 2m0s healthy
}
