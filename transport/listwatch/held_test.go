package listwatch_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
	"github.com/rewatch/rewatch/transport/listwatch"
)

var _ driver.SkippingTransport = (*listwatch.Transport)(nil)

// heldAt is a store's query holding ns/a at 10 and ns/b at 20.
func heldAt(namespace, name string) (rv, uid string, ok bool) {
	if namespace != "ns" {
		return "", "", false
	}
	switch name {
	case "a":
		return "10", "", true
	case "b":
		return "20", "", true
	}
	return "", "", false
}

// docs/semantics.md, "Relists": on a relist an item the store holds at the item's own
// resourceVersion is handed over as its key alone, so the store keeps what it holds; a changed
// item, a new one and one without a resourceVersion carry their objects; the page that ends
// them carries none.
func TestListHeldHandsOverUnchangedItemsAsKeys(t *testing.T) {
	lw := &cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "42"},
			Items: []corev1.ConfigMap{*cm("a", "10"), *cm("b", "21"), *cm("c", "30"), *cm("d", "")}}, nil
	}}
	tr, err := listwatch.New(lw, "configmaps")
	require.NoError(t, err)
	var got []fsm.Event
	tr.ListHeld(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 4, ResourceVersion: "41", RVSet: true}, heldAt,
		func(e fsm.Event) bool { got = append(got, e); return true })
	require.Len(t, got, 5)
	for i, want := range []struct {
		key, rv string
		object  bool
	}{{"ns/a", "10", false}, {"ns/b", "21", true}, {"ns/c", "30", true}, {"ns/d", "", true}} {
		e := got[i]
		require.Equal(t, fsm.EvListItem, e.Kind, e.Key)
		require.Equal(t, uint64(4), e.Request)
		require.Equal(t, want.key, e.Key)
		require.Equal(t, want.rv, e.ResourceVersion)
		require.Equal(t, want.object, e.Object != nil, want.key)
	}
	page := got[4]
	require.Equal(t, fsm.EvListPage, page.Kind)
	require.Equal(t, "42", page.ResourceVersion)
	require.Equal(t, 4, page.ItemCount)
	require.Empty(t, page.Items)

	// Without a query it is List: one page carrying its items.
	got = nil
	tr.ListHeld(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 5}, nil, func(e fsm.Event) bool { got = append(got, e); return true })
	require.Len(t, got, 1)
	require.Len(t, got[0].Items, 4)
}

// An item without a name is handed over with its object, keyed by its namespace alone, as
// client-go's reflector hands it to its store (docs/semantics.md, "Stores"); an item without
// metadata fails the LIST.
func TestListHeldHandsOverAnItemWithoutAName(t *testing.T) {
	var list runtime.Object = &corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}}}
	lw := &cache.ListWatch{ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil }}
	tr, err := listwatch.New(lw, "configmaps")
	require.NoError(t, err)
	var got []fsm.Event
	tr.ListHeld(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 1}, heldAt, func(e fsm.Event) bool { got = append(got, e); return true })
	require.Len(t, got, 2)
	require.Equal(t, fsm.EvListItem, got[0].Kind)
	require.Equal(t, "ns/", got[0].Key)
	require.NotNil(t, got[0].Object)
	require.Equal(t, fsm.EvListPage, got[1].Kind)

	list = &metav1.List{Items: []runtime.RawExtension{{Object: &metav1.Status{}}}}
	got = nil
	tr.ListHeld(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 2}, heldAt, func(e fsm.Event) bool { got = append(got, e); return true })
	require.Len(t, got, 1)
	require.Equal(t, fsm.EvListFailed, got[0].Kind)
	require.Equal(t, fsm.Decode, got[0].Failure.Transport)
}

// docs/semantics.md, "Relists": a watch-list's initial ADDED events that the store holds at
// their resourceVersion are handed over as keys; after the bookmark that ends the initial
// state, the watch's own events carry their objects whatever the store holds.
func TestWatchHeldHandsOverUnchangedInitialEventsAsKeys(t *testing.T) {
	end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "50", Annotations: map[string]string{transport.InitialEventsEnd: "true"}}}
	send := []watch.Event{
		{Type: watch.Added, Object: cm("a", "10")},
		{Type: watch.Added, Object: cm("b", "21")},
		{Type: watch.Bookmark, Object: end},
		{Type: watch.Added, Object: cm("a", "10")},
		{Type: watch.Modified, Object: cm("b", "20")},
	}
	run := func(c fsm.Command) []fsm.Event {
		fw := watch.NewFakeWithChanSize(len(send), false)
		for _, e := range send {
			fw.Action(e.Type, e.Object)
		}
		fw.Stop()
		var opts metav1.ListOptions
		lw := &cache.ListWatch{WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { opts = o; return fw, nil }}
		tr, err := listwatch.New(lw, "configmaps")
		require.NoError(t, err)
		var got []fsm.Event
		tr.WatchHeld(context.Background(), c, heldAt, func(e fsm.Event) bool { got = append(got, e); return true })
		require.Equal(t, c.SendInitialEvents, opts.SendInitialEvents != nil && *opts.SendInitialEvents)
		require.Len(t, got, 7) // opened, five events, the end
		return got[1:6]
	}
	got := run(fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, ResourceVersion: "0", RVSet: true, Match: "NotOlderThan", Bookmarks: true, SendInitialEvents: true})
	require.Equal(t, "ns/a", got[0].Key)
	require.Equal(t, "10", got[0].ResourceVersion)
	require.Nil(t, got[0].Object, "held at 10: handed over as its key")
	require.NotNil(t, got[1].Object, "changed: handed over whole")
	require.True(t, got[2].InitialEventsEnd)
	require.NotNil(t, got[3].Object, "after the initial state: the watch's own event")
	require.NotNil(t, got[4].Object)

	// A plain watch (no initial state) hands every object over.
	for _, e := range run(fsm.Command{Kind: fsm.CmdOpenWatch, Request: 3, ResourceVersion: "50", Bookmarks: true}) {
		require.Equal(t, e.Type != fsm.Bookmark, e.Object != nil, "%s %s", e.Type, e.Key)
	}
}
