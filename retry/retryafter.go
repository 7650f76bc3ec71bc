package retry

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRetryAfterCap bounds an honoured Retry-After, so a broken or hostile
// server cannot park a client for hours.
const DefaultRetryAfterCap = 5 * time.Minute

// maxRetryAfterSeconds is the largest delta-seconds a time.Duration holds;
// anything longer is treated as garbage rather than wrapped.
const maxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses a Retry-After header value: delta-seconds (ASCII
// digits only, as the Python client requires, so no sign, fraction or
// surrounding space) or an HTTP-date in any format http.ParseTime accepts.
// A date at or before now gives 0, present. Anything else, including a
// number of seconds too large for a time.Duration, is absent.
//
// Accepting an HTTP-date is a deliberate difference from client-go and the
// Python client, which ignore it; RFC 9110 allows both forms.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	if isDigits(value) {
		secs, err := strconv.ParseInt(value, 10, 64)
		if err != nil || secs > maxRetryAfterSeconds {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FromResponse reads resp's Retry-After header as ParseRetryAfter does. Only
// the first value counts, as with http.Header.Get.
func FromResponse(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	return ParseRetryAfter(resp.Header.Get("Retry-After"), now)
}

// FromError reads the delay an error asks for, at the current time: see FromErrorAt.
func FromError(err error) (time.Duration, bool) { return FromErrorAt(err, time.Now()) }

// FromErrorAt reads the delay an error asks for. A *ResponseError anywhere in err's chain
// answers with its response's Retry-After header (delta-seconds, or an HTTP-date measured
// from now); any other error with a Kubernetes Status answers with details.retryAfterSeconds,
// via apierrors.SuggestsClientDelay, which also reports a ServerTimeout's 0 as present.
// Negative and unparsable values are absent. OnRetryAfterError reads errors through this same
// function, so the two always agree on the delay; whether to retry at all it decides apart, by
// the status code (429 and 5xx only), as client-go's REST client does.
func FromErrorAt(err error, now time.Time) (time.Duration, bool) {
	if re, ok := errors.AsType[*ResponseError](err); ok {
		if d, ok := ParseRetryAfter(re.Header.Get("Retry-After"), now); ok {
			return d, true
		}
		// No usable header: the Status the response carried, if it wraps one, may still say.
	}
	secs, ok := apierrors.SuggestsClientDelay(err)
	if !ok || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// Cap clamps a Retry-After into [0, limit]; a negative limit counts as 0.
func Cap(d, limit time.Duration) time.Duration {
	return min(max(d, 0), max(limit, 0))
}
