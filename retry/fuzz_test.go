package retry_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rewatch/rewatch/retry"
)

// The seed corpus lives in testdata/fuzz/FuzzParseRetryAfter.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, value string) {
		d, ok := retry.ParseRetryAfter(value, now)
		if d < 0 {
			t.Fatalf("%q: negative %v", value, d)
		}
		if !ok {
			if d != 0 {
				t.Fatalf("%q: absent but %v", value, d)
			}
			return
		}
		if digitsOnly(value) {
			secs, err := strconv.ParseInt(value, 10, 64)
			if err != nil || time.Duration(secs)*time.Second != d {
				t.Fatalf("%q: digits gave %v", value, d)
			}
			return
		}
		if _, err := http.ParseTime(value); err != nil {
			t.Fatalf("%q: present %v but neither digits nor an HTTP date", value, d)
		}
	})
}

func digitsOnly(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
