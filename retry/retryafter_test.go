package retry_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/retry"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	tests := []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		// The Python client's cases: delta-seconds must be digits only.
		{"3", 3 * time.Second, true},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{"1.5", 0, false},
		{"-1", 0, false},
		{"", 0, false},
		{" 3 ", 0, false},
		{"abc", 0, false},
		{"+5", 0, false},
		{"1e3", 0, false},
		{"007", 7 * time.Second, true},
		// The largest whole seconds a time.Duration holds, and one more.
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", 0, false},
		{"99999999999999999999999", 0, false},
		// HTTP-date, which client-go and the Python client ignore.
		{"Wed, 21 Oct 2015 07:28:00 GMT", time.Minute, true},
		{"Wednesday, 21-Oct-15 07:28:00 GMT", time.Minute, true},
		{"Wed Oct 21 07:28:00 2015", time.Minute, true},
		{"Wed, 21 Oct 2015 07:27:00 GMT", 0, true},
		{"Wed, 21 Oct 2015 07:00:00 GMT", 0, true},
		{"Wed, 21 Oct 2015 07:28:00 GMT ", 0, false},
		{"2015-10-21T07:28:00Z", 0, false},
	}
	for _, tc := range tests {
		got, ok := retry.ParseRetryAfter(tc.value, now)
		assert.Equal(t, tc.wantOK, ok, "%q present", tc.value)
		assert.Equal(t, tc.want, got, "%q", tc.value)
	}
}

func TestFromResponse(t *testing.T) {
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}}
	_, ok := retry.FromResponse(resp, epoch)
	assert.False(t, ok, "no header")
	resp.Header.Set("Retry-After", "12")
	d, ok := retry.FromResponse(resp, epoch)
	assert.True(t, ok)
	assert.Equal(t, 12*time.Second, d)
	resp.Header.Set("Retry-After", epoch.Add(90*time.Second).Format(http.TimeFormat))
	d, ok = retry.FromResponse(resp, epoch)
	assert.True(t, ok)
	assert.Equal(t, 90*time.Second, d)
	_, ok = retry.FromResponse(nil, epoch)
	assert.False(t, ok)
}

func TestFromError(t *testing.T) {
	serverTimeout := apierrors.NewServerTimeout(schemaGR, "list", 0)
	negative := &apierrors.StatusError{ErrStatus: metav1.Status{
		Reason: metav1.StatusReasonServerTimeout, Code: 500, Details: &metav1.StatusDetails{RetryAfterSeconds: -4},
	}}
	tests := []struct {
		name   string
		err    error
		want   time.Duration
		wantOK bool
	}{
		{"429 with retryAfterSeconds", apierrors.NewTooManyRequests("slow down", 7), 7 * time.Second, true},
		{"wrapped", errors.Join(errors.New("list"), apierrors.NewTooManyRequests("slow down", 7)), 7 * time.Second, true},
		{"429 without", apierrors.NewTooManyRequests("slow down", 0), 0, false},
		{"ServerTimeout's 0 means retry now", serverTimeout, 0, true},
		{"negative is absent", negative, 0, false},
		{"no details", apierrors.NewInternalError(errors.New("boom")), 0, false},
		{"not a Status", errors.New("plain"), 0, false},
		{"nil", nil, 0, false},
	}
	for _, tc := range tests {
		got, ok := retry.FromError(tc.err)
		assert.Equal(t, tc.wantOK, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestCap(t *testing.T) {
	assert.Equal(t, 5*time.Minute, retry.Cap(time.Hour, retry.DefaultRetryAfterCap))
	assert.Equal(t, 3*time.Second, retry.Cap(3*time.Second, retry.DefaultRetryAfterCap))
	assert.Equal(t, time.Duration(0), retry.Cap(-time.Second, time.Minute))
	assert.Equal(t, time.Duration(0), retry.Cap(time.Second, 0))
	assert.Equal(t, time.Duration(0), retry.Cap(time.Second, -time.Minute))
}
