package retry_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/retry"
)

var schemaGR = schema.GroupResource{Resource: "pods"}

func respErr(code int, retryAfter string) error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &retry.ResponseError{StatusCode: code, Header: h}
}

func TestOnRetryAfterError(t *testing.T) {
	noJitter := retry.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 5}
	tests := []struct {
		name      string
		b         retry.Backoff
		opts      []retry.Option
		errs      []error
		wantCalls int
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"429 Status with retryAfterSeconds", noJitter, nil,
			[]error{apierrors.NewTooManyRequests("slow", 3)}, 2, false, []time.Duration{3 * time.Second}},
		{"503 header delta-seconds", noJitter, nil,
			[]error{respErr(503, "2")}, 2, false, []time.Duration{2 * time.Second}},
		{"429 header HTTP-date", noJitter, nil,
			[]error{respErr(429, epoch.Add(7*time.Second).Format(http.TimeFormat))}, 2, false, []time.Duration{7 * time.Second}},
		{"wrapped error", noJitter, nil,
			[]error{fmt.Errorf("get pod: %w", apierrors.NewTooManyRequests("slow", 1))}, 2, false, []time.Duration{time.Second}},
		{"backoff longer than Retry-After wins", retry.Backoff{Duration: 10 * time.Second}, nil,
			[]error{apierrors.NewTooManyRequests("slow", 1)}, 2, false, []time.Duration{10 * time.Second}},
		{"ServerTimeout retry-now waits the backoff", noJitter, nil,
			[]error{apierrors.NewServerTimeout(schemaGR, "list", 0)}, 2, false, []time.Duration{10 * time.Millisecond}},
		{"Retry-After capped at 5 minutes", noJitter, nil,
			[]error{apierrors.NewTooManyRequests("slow", 3600)}, 2, false, []time.Duration{5 * time.Minute}},
		{"WithRetryAfterCap", noJitter, []retry.Option{retry.WithRetryAfterCap(10 * time.Second)},
			[]error{respErr(429, "3600")}, 2, false, []time.Duration{10 * time.Second}},
		{"500 without Retry-After returned at once", noJitter, nil,
			[]error{apierrors.NewInternalError(errors.New("boom"))}, 1, true, nil},
		{"429 without Retry-After returned at once", noJitter, nil,
			[]error{respErr(429, "")}, 1, true, nil},
		{"garbage Retry-After returned at once", noJitter, nil,
			[]error{respErr(503, "1.5")}, 1, true, nil},
		{"404 with Retry-After not retried", noJitter, nil,
			[]error{respErr(404, "1")}, 1, true, nil},
		{"409 Status with retryAfterSeconds not retried", noJitter, nil,
			[]error{&apierrors.StatusError{ErrStatus: metav1.Status{Code: 409, Reason: metav1.StatusReasonConflict, Details: &metav1.StatusDetails{RetryAfterSeconds: 1}}}},
			1, true, nil},
		{"plain error not retried", noJitter, nil, []error{errors.New("dial tcp: refused")}, 1, true, nil},
		{"at most 10 retries by default", noJitter, nil,
			repeat(respErr(429, "1"), 50), 11, true, repeatDur(time.Second, 10)},
		{"WithMaxRetries", noJitter, []retry.Option{retry.WithMaxRetries(2)},
			repeat(respErr(429, "1"), 50), 3, true, repeatDur(time.Second, 2)},
		{"WithMaxRetries(0)", noJitter, []retry.Option{retry.WithMaxRetries(0)},
			repeat(respErr(429, "1"), 50), 1, true, nil},
		{"DefaultRetryAfterBackoff: the server's value alone decides", retry.DefaultRetryAfterBackoff, nil,
			[]error{respErr(429, "2"), apierrors.NewTooManyRequests("slow", 5)}, 3, false, []time.Duration{2 * time.Second, 5 * time.Second}},
		{"WithRetriable accepts", noJitter, []retry.Option{retry.WithRetriable(apierrors.IsTooManyRequests)},
			[]error{apierrors.NewTooManyRequests("slow", 1)}, 2, false, []time.Duration{time.Second}},
		{"WithRetriable refuses a 503 the server asked to retry", noJitter, []retry.Option{retry.WithRetriable(apierrors.IsTooManyRequests)},
			[]error{respErr(503, "1")}, 1, true, nil},
		{"backoff grows across retries", retry.Backoff{Duration: time.Second, Factor: 2, Steps: 10}, nil,
			repeat(respErr(503, "0"), 3), 4, false, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newInstantClock()
			fn, calls := script(tc.errs...)
			opts := append([]retry.Option{retry.WithClock(clock)}, tc.opts...)
			err := retry.OnRetryAfterError(t.Context(), tc.b, fn, opts...)
			if tc.wantErr {
				assert.EqualError(t, err, fmt.Sprintf("attempt %d: %v", *calls, tc.errs[*calls-1]), "the last error, as returned")
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.wantCalls, *calls)
			assert.Equal(t, tc.wantWaits, clock.Waits())
		})
	}
}

func TestResponseError(t *testing.T) {
	cause := errors.New("body: too many")
	resp := &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"4"}}}
	err := retry.NewResponseError(resp, cause)
	assert.EqualError(t, err, "HTTP 429 Too Many Requests: body: too many")
	assert.ErrorIs(t, err, cause)
	resp.Header.Set("Retry-After", "99")
	assert.Equal(t, "4", err.Header.Get("Retry-After"), "headers are copied")
	assert.EqualError(t, &retry.ResponseError{StatusCode: 503}, "HTTP 503 Service Unavailable")
}

func repeatDur(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// FromError and OnRetryAfterError read Retry-After through one path: on every error, the delay
// FromErrorAt reports is the one OnRetryAfterError waits (with a zero backoff), and an error
// FromErrorAt finds no delay in is not retried.
func TestFromErrorAgreesWithOnRetryAfterError(t *testing.T) {
	for name, err := range map[string]error{
		"Status retryAfterSeconds":     apierrors.NewTooManyRequests("slow", 4),
		"header delta-seconds":         respErr(429, "3"),
		"header HTTP-date":             respErr(503, epoch.Add(9*time.Second).Format(http.TimeFormat)),
		"header HTTP-date in the past": respErr(503, epoch.Add(-time.Hour).Format(http.TimeFormat)),
		"wrapped ResponseError":        fmt.Errorf("list: %w", respErr(429, "6")),
		"negative header":              respErr(429, "-5"),
		"garbage header":               respErr(429, "soon"),
		"no header":                    respErr(429, ""),
		"500 without details":          apierrors.NewInternalError(errors.New("boom")),
		"garbage header over a Status": &retry.ResponseError{StatusCode: 429, Header: http.Header{"Retry-After": {"soon"}}, Err: apierrors.NewTooManyRequests("slow", 2)},
	} {
		t.Run(name, func(t *testing.T) {
			want, ok := retry.FromErrorAt(err, epoch)
			clock := newInstantClock()
			fn, calls := script(err)
			retryErr := retry.OnRetryAfterError(t.Context(), retry.DefaultRetryAfterBackoff, fn, retry.WithClock(clock))
			if !ok {
				assert.Error(t, retryErr)
				assert.Equal(t, 1, *calls, "no Retry-After, no retry")
				return
			}
			assert.NoError(t, retryErr)
			assert.Equal(t, 2, *calls)
			if want == 0 {
				assert.Empty(t, clock.Waits(), "a date in the past means now")
			} else {
				assert.Equal(t, []time.Duration{want}, clock.Waits())
			}
		})
	}
}
