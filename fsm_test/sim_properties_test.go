package fsm_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/sim"
)

// applyOps performs random writes on a small name space so that creates, updates and deletes
// of the same object interleave; it returns how many succeeded (each is exactly one event).
func applyOps(t *rapid.T, s *sim.Server, label string) int {
	n := 0
	for range rapid.IntRange(0, 15).Draw(t, label+"-count") {
		name := fmt.Sprint("o", rapid.IntRange(0, 3).Draw(t, label+"-name"))
		var err error
		switch rapid.IntRange(0, 2).Draw(t, label+"-op") {
		case 0:
			_, err = s.Create(sim.ConfigMaps, "ns", name, map[string]string{"v": "c"})
		case 1:
			_, err = s.Update(sim.ConfigMaps, "ns", name, map[string]string{"v": rapid.StringN(0, 3, -1).Draw(t, "v")})
		case 2:
			_, err = s.Delete(sim.ConfigMaps, "ns", name)
		}
		if err == nil {
			n++
		}
	}
	return n
}

// The simulator keeps the contract every reflector relies on, checked with client-go's own
// dynamic client: a paginated LIST at RV X (exact) plus a WATCH from X reconstructs the final
// state.
func TestPropertySimListAtXPlusWatchFromXReconstructsState(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := sim.New(sim.Options{})
		u, err := s.Start()
		require.NoError(rt, err)
		defer s.Close()
		dc, err := dynamic.NewForConfig(&rest.Config{Host: u})
		require.NoError(rt, err)
		cms := dc.Resource(sim.ConfigMaps).Namespace("ns")
		ctx := context.Background()

		applyOps(rt, s, "before")
		x := s.CurrentRV()
		events := applyOps(rt, s, "after")

		state := map[string]string{}
		opts := metav1.ListOptions{ResourceVersion: x, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 2}
		for {
			l, err := cms.List(ctx, opts)
			require.NoError(rt, err)
			require.Equal(rt, x, l.GetResourceVersion())
			for _, it := range l.Items {
				state[it.GetNamespace()+"/"+it.GetName()] = it.GetResourceVersion()
			}
			if l.GetContinue() == "" {
				break
			}
			opts = metav1.ListOptions{Continue: l.GetContinue(), Limit: 2}
		}
		if events > 0 {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: x})
			require.NoError(rt, err)
			for range events {
				e, ok := <-w.ResultChan()
				require.True(rt, ok, "the watch ended before delivering every event")
				require.NotEqual(rt, watch.Error, e.Type, "watch error: %v", e.Object)
				obj, err := meta.Accessor(e.Object)
				require.NoError(rt, err)
				key := obj.GetNamespace() + "/" + obj.GetName()
				if e.Type == watch.Deleted {
					delete(state, key)
				} else {
					state[key] = obj.GetResourceVersion()
				}
			}
			w.Stop()
		}
		require.Equal(rt, s.Snapshot(sim.ConfigMaps), state)
	})
}
