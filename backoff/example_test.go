package backoff_test

import (
	"fmt"

	"github.com/rewatch/rewatch/backoff"
)

// Reflector is client-go's reflector backoff: 800 ms doubling to a 30 s cap, each delay
// jittered up to 100% more. Delay is pure: the delay of an attempt given its random number, so
// the reflector's machine draws r from its seeded source and stays replayable.
func ExampleReflector() {
	b := backoff.Reflector()
	for attempt := range 7 {
		lo, hi := b.Bounds(attempt)
		fmt.Printf("attempt %d: %v (r=0) … %v (r=0.5), within [%v, %v)\n", attempt, b.Delay(attempt, 0), b.Delay(attempt, 0.5), lo, hi)
	}
	// Output:
	// attempt 0: 800ms (r=0) … 1.2s (r=0.5), within [800ms, 1.6s)
	// attempt 1: 1.6s (r=0) … 2.4s (r=0.5), within [1.6s, 3.2s)
	// attempt 2: 3.2s (r=0) … 4.8s (r=0.5), within [3.2s, 6.4s)
	// attempt 3: 6.4s (r=0) … 9.6s (r=0.5), within [6.4s, 12.8s)
	// attempt 4: 12.8s (r=0) … 19.2s (r=0.5), within [12.8s, 25.6s)
	// attempt 5: 25.6s (r=0) … 38.4s (r=0.5), within [25.6s, 51.2s)
	// attempt 6: 30s (r=0) … 45s (r=0.5), within [30s, 1m0s)
}

// Step advances a Backoff value in place, as apimachinery's wait.Backoff.Step does; with no
// jitter no random source is needed.
func ExampleBackoff_Step() {
	b := backoff.Backoff{Duration: 100e6, Factor: 3, Steps: 4, Cap: 2e9}
	for range 5 {
		fmt.Print(b.Step(nil), " ")
	}
	fmt.Println()
	// Output: 100ms 300ms 900ms 2s 2s
}
