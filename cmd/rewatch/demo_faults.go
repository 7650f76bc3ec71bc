package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// faultKind is one kind of failure the demo injects. Each is made the way a real cluster makes
// it: Status objects from apimachinery through the fault proxy, and the 410 by the simulated
// server itself after a compaction.
type faultKind string

const (
	fault429Start faultKind = "429-start" // WATCH answered 429 with a Retry-After header
	fault429Event faultKind = "429-event" // 429 Status as an ERROR event inside an open watch
	faultInternal faultKind = "internal"  // 500 InternalError as an ERROR event
	faultReset    faultKind = "reset"     // TCP RST in the middle of a watch stream
	faultDrop     faultKind = "drop"      // the server ends every watch stream cleanly
	fault410      faultKind = "410"       // compaction, then a re-watch from a compacted RV
)

var faultKinds = []faultKind{fault429Start, fault429Event, faultInternal, faultReset, faultDrop, fault410}

const defaultFaultSpec = "429-start=2,429-event=2,internal=2,reset=2,drop=1,410=1"

// maxFaultsPerKind keeps a typo like internal=1000 from turning a demo into a soak test.
const maxFaultsPerKind = 50

// parseFaults reads "kind=n,kind=n"; "kind" alone means 1 and "none" (or "") means no faults.
func parseFaults(spec string) (map[faultKind]int, error) {
	out := map[faultKind]int{}
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return out, nil
	}
	for _, part := range strings.Split(spec, ",") {
		name, count, hasCount := strings.Cut(strings.TrimSpace(part), "=")
		k := faultKind(name)
		if !slices.Contains(faultKinds, k) {
			return nil, usagef("--faults: unknown fault %q (known: %s)", name, kindList())
		}
		n := 1
		if hasCount {
			var err error
			n, err = strconv.Atoi(count)
			if err != nil || n < 0 || n > maxFaultsPerKind {
				return nil, usagef("--faults: %s=%s: want a count from 0 to %d", name, count, maxFaultsPerKind)
			}
		}
		out[k] = n
	}
	return out, nil
}

func kindList() string {
	s := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// schedule expands counts into a seeded order, so one seed always injects in one order.
func schedule(counts map[faultKind]int, rng *rand.Rand) []faultKind {
	var out []faultKind
	for _, k := range faultKinds {
		for range counts[k] {
			out = append(out, k)
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func describeFault(k faultKind, afterEvents int) string {
	switch k {
	case fault429Start:
		return "next WATCH is answered 429 TooManyRequests with Retry-After: 1"
	case fault429Event:
		return fmt.Sprintf("next watch gets a 429 ERROR event (retryAfterSeconds=1) after %d events", afterEvents)
	case faultInternal:
		return fmt.Sprintf("next watch gets a 500 InternalError ERROR event after %d events", afterEvents)
	case faultReset:
		return fmt.Sprintf("next watch connection is reset (RST) after %d events", afterEvents)
	case faultDrop:
		return "server ends every watch stream"
	case fault410:
		return "server ends watches, writes and compacts while the re-watch is in flight: the server answers 410"
	}
	return string(k)
}
