package listwatch_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/transporttest"
	"github.com/rewatch/rewatch/transport/listwatch"
)

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
}

// The machine's command becomes the ListOptions client-go would send, the tweak adds the
// selectors, and a list result becomes a page.
func TestListTranslatesCommandAndResult(t *testing.T) {
	var got metav1.ListOptions
	lw := &cache.ListWatch{ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
		got = o
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}, Items: []corev1.ConfigMap{*cm("a", "40")}}, nil
	}}
	tr, err := listwatch.New(lw, "configmaps", listwatch.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }))
	require.NoError(t, err)
	e, ok := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage, Request: 3, ResourceVersion: "0", RVSet: true, Match: "NotOlderThan", Limit: 500, Continue: "tok"})
	require.True(t, ok)
	require.Equal(t, metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: "NotOlderThan", Limit: 500, Continue: "tok", LabelSelector: "app=x"}, got)
	require.Equal(t, fsm.EvListPage, e.Kind)
	require.Equal(t, uint64(3), e.Request)
	require.Equal(t, "42", e.ResourceVersion)
	require.Equal(t, "next", e.Continue)
	require.Len(t, e.Items, 1)
}

// docs/semantics.md: a client-go error keeps the server's Status (and so retryAfterSeconds,
// which the machine reads); an error without one is a connection failure named by its type.
func TestListFailuresKeepTheStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		err       error
		code      int
		transport fsm.Transport
	}{
		"429 with retryAfterSeconds": {apierrors.NewTooManyRequests("slow down", 7), 429, fsm.NoTransportError},
		"410":                        {apierrors.NewResourceExpired("too old"), 410, fsm.NoTransportError},
		"connection refused":         {&wrapped{syscall.ECONNREFUSED}, 0, fsm.Refused},
		"something else":             {errors.New("tls: bad certificate"), 0, fsm.OtherTransport},
	} {
		t.Run(name, func(t *testing.T) {
			lw := &cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, tc.err }}
			tr, err := listwatch.New(lw, "configmaps")
			require.NoError(t, err)
			e, ok := transporttest.ListOnce(tr, fsm.Command{Kind: fsm.CmdListPage})
			require.True(t, ok)
			require.Equal(t, fsm.EvListFailed, e.Kind)
			require.Equal(t, tc.transport, e.Failure.Transport)
			if tc.code != 0 {
				require.NotNil(t, e.Failure.Status)
				require.EqualValues(t, tc.code, e.Failure.Status.Code)
			}
			if name == "429 with retryAfterSeconds" {
				require.EqualValues(t, 7, e.Failure.Status.Details.RetryAfterSeconds)
			}
		})
	}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "dial tcp: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// A watch stream's events, its Error events and its end become the HTTP transport's events.
func TestWatchTranslatesEvents(t *testing.T) {
	for name, tc := range map[string]struct {
		send []watch.Event
		last fsm.Event
	}{
		"objects, a bookmark and a close": {
			send: []watch.Event{{Type: watch.Added, Object: cm("a", "5")}, {Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				ResourceVersion: "9", Annotations: map[string]string{"k8s.io/initial-events-end": "true"}}}}},
			last: fsm.Event{Kind: fsm.EvWatchEnded},
		},
		"an Error event with a Status": {
			send: []watch.Event{{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}}},
			last: fsm.Event{Kind: fsm.EvWatchError, Failure: &fsm.Failure{Status: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}, Message: "too old"}},
		},
		"an Error event without a Status": {
			send: []watch.Event{{Type: watch.Error, Object: cm("x", "1")}},
			last: fsm.Event{Kind: fsm.EvWatchError, Failure: &fsm.Failure{Transport: fsm.Decode, Message: "Error event carrying a *v1.ConfigMap, not a Status"}},
		},
		"an object without metadata": {
			send: []watch.Event{{Type: watch.Modified, Object: &metav1.Status{}}},
			last: fsm.Event{Kind: fsm.EvWatchEnded, Failure: &fsm.Failure{Transport: fsm.Decode, Message: "decode: MODIFIED object without metadata: object does not implement the Object interfaces"}},
		},
		"an unknown event type": {
			send: []watch.Event{{Type: "SURPRISE", Object: cm("a", "1")}},
			last: fsm.Event{Kind: fsm.EvWatchEnded, Failure: &fsm.Failure{Transport: fsm.Decode, Message: `decode: unknown watch event type "SURPRISE"`}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			fw := watch.NewFakeWithChanSize(len(tc.send), false)
			for _, e := range tc.send {
				fw.Action(e.Type, e.Object)
			}
			fw.Stop() // closes the channel once the buffered events are read
			var opts metav1.ListOptions
			lw := &cache.ListWatch{WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { opts = o; return fw, nil }}
			tr, err := listwatch.New(lw, "configmaps")
			require.NoError(t, err)
			var got []fsm.Event
			tr.Watch(context.Background(), fsm.Command{Kind: fsm.CmdOpenWatch, Request: 1, ResourceVersion: "5", Bookmarks: true, TimeoutSeconds: 300},
				func(e fsm.Event) bool { got = append(got, e); return true })
			require.False(t, opts.Watch, "Watch is the ListerWatcher's to set, as with client-go's reflector")
			require.True(t, opts.AllowWatchBookmarks)
			require.EqualValues(t, 300, *opts.TimeoutSeconds)
			require.Equal(t, fsm.EvWatchOpened, got[0].Kind)
			last := got[len(got)-1]
			require.Equal(t, tc.last.Kind, last.Kind)
			if last.Failure != nil {
				f := *last.Failure
				f.Cause = nil // the transport's own error, which transport's tests unwrap
				last.Failure = &f
			}
			require.Equal(t, tc.last.Failure, last.Failure)
			if name == "objects, a bookmark and a close" {
				require.Len(t, got, 4)
				require.Equal(t, "ns/a", got[1].Key)
				require.True(t, got[2].InitialEventsEnd)
			}
		})
	}
}

func TestWatchOpenFailure(t *testing.T) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return nil, apierrors.NewInternalError(errors.New("etcd is away"))
	}}
	tr, err := listwatch.New(lw, "configmaps")
	require.NoError(t, err)
	var got []fsm.Event
	tr.Watch(context.Background(), fsm.Command{Kind: fsm.CmdOpenWatch}, func(e fsm.Event) bool { got = append(got, e); return true })
	require.Len(t, got, 1)
	require.Equal(t, fsm.EvWatchOpenFailed, got[0].Kind)
	require.Equal(t, metav1.StatusReasonInternalError, got[0].Failure.Status.Reason)
	_, err = listwatch.New(nil, "x")
	require.Error(t, err)
}
