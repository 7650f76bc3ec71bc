package e2e

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// bearer sends the token it holds now with every request.
type bearer struct{ token atomic.Pointer[string] }

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+*b.token.Load())
	return http.DefaultTransport.RoundTrip(r)
}

// docs/semantics.md "credentials expired", on kube-apiserver: credentials that expire while the
// reflector relists — the relist's LIST answered 401 by the server itself — ask the caller's
// RefreshCredentials hook, as a watch's 401 does. A refresh that fails once is asked again a
// minute later, and the reflector is synced again at once after the refresh that works, where
// it used to send the old token at every backoff step for good while HasSynced stayed true.
func TestCredentialsExpiredWhileRelistingAreRefreshed(t *testing.T) {
	b := sharedReal(t)
	// Most of its minute and a half is the once-a-minute bound: it waits beside the others.
	t.Parallel()
	real := b.(*testbackend.Real)
	e := newEnv(t, b, configMaps, 5)
	valid, expired := real.Server.Token(), "expired-token"
	creds := &bearer{}
	creds.token.Store(&valid)
	var mu sync.Mutex
	var asked []time.Time
	var refreshed time.Time
	// The watch the first sync opens is ended with a 410 three seconds later: a relist.
	e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.WatchError(faultproxy.Expired()).AfterDelay(3 * time.Second)})
	e.start(func(c *rewatch.Config) {
		c.Client = &http.Client{Transport: creds}
		c.RefreshCredentials = func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, time.Now())
			if len(asked) == 1 {
				return errTokenSourceDown // the first refresh fails
			}
			creds.token.Store(&valid)
			refreshed = time.Now()
			return nil
		}
	})
	e.converged()
	creds.token.Store(&expired) // the credentials expire before the relist
	e.waitCause(fsm.CauseListRefreshCredentials)
	require.True(t, e.r.HasSynced(), "the relist serves the store it had meanwhile")
	// The relist's LIST completes once the credentials work again.
	var tr driver.Transition
	require.True(t, waitFor(2*time.Minute, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, x := range e.trans {
			if x.Cause == fsm.CauseListComplete && x.From == fsm.Relisting {
				tr = x
				return true
			}
		}
		return false
	}), "the relist never completed:\n%s", e.describe())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 2, "the hook was asked twice: the refresh that failed, then a minute later")
	assert.GreaterOrEqual(t, asked[1].Sub(asked[0]), 59*time.Second, "at most once a minute")
	require.False(t, refreshed.IsZero())
	back := tr.Event.Now.Sub(refreshed)
	assert.Less(t, back, time.Minute, "synced again within a minute of the refresh that worked")
	e.converged()
	t.Logf("synced again %v after the refresh that worked", back.Round(time.Millisecond))
	e.report("credentials expired while relisting", "synced again "+back.Round(time.Millisecond).String()+" after the refresh")
}

var errTokenSourceDown = errorString("token source unreachable")

type errorString string

func (e errorString) Error() string { return string(e) }
