package transitions

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// FuzzClassify reads arbitrary Status bodies, codes and Retry-After values as the driver would
// hand them over: classification must never panic, a Retry-After must never come out negative,
// and the answers apimachinery is sure of must hold.
func FuzzClassify(f *testing.F) {
	f.Add([]byte(`{"kind":"Status","code":429,"reason":"TooManyRequests","details":{"retryAfterSeconds":3}}`), 429, int64(0))
	f.Add([]byte(`{"code":410,"reason":"Expired"}`), 0, int64(-5))
	f.Add([]byte(`{"code":504,"reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge"}]}}`), 504, int64(1e18))
	f.Add([]byte(`{"code":500,"reason":"ServerTimeout","details":{"retryAfterSeconds":-2}}`), 500, int64(7e9))
	f.Add([]byte(`not json`), 418, int64(1))
	f.Fuzz(func(t *testing.T, status []byte, code int, header int64) {
		fl := &fsm.Failure{Code: code, RetryAfter: time.Duration(header), HasRetryAfter: header%2 == 0}
		var st metav1.Status
		if json.Unmarshal(status, &st) == nil {
			fl.Status = &st
		}
		c := classify(fl)
		if d, ok := retryAfter(fl); ok && d < 0 {
			t.Fatalf("negative Retry-After %v from %+v", d, fl)
		}
		if fl.Status == nil && code == 429 && c != fsm.ClassBusy {
			t.Fatalf("bare 429 classified %d", c)
		}
		if fl.Status == nil && code == 410 && c != fsm.ClassExpired {
			t.Fatalf("bare 410 classified %d", c)
		}
	})
}
