package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// BenchmarkSnapshot saves and loads a store of 20,000 ConfigMaps of about 1 KiB each through
// the typed decoder's codec into a directory (docs/semantics.md, "Persisted cache"); MB/s is
// the file's bytes.
func BenchmarkSnapshot(b *testing.B) {
	const n = 20000
	objs := make([]any, n)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Namespace: "bench", ResourceVersion: fmt.Sprint(1000 + i),
				UID: "0b1e4c3a-9d7f-4a52-8f0e-000000000000", CreationTimestamp: created, Labels: map[string]string{"app": "bench"}},
			Data: map[string]string{"payload": strings.Repeat("x", 900)},
		}
	}
	tr := transportWith(b, httpapi.Typed(scheme.Scheme), httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "bench"})
	codec, err := tr.SnapshotCodec()
	require.NoError(b, err)
	id := tr.SnapshotIdentity()
	st := persist.Dir(b.TempDir())
	stats, err := persist.Save(b.Context(), st, id, codec, "21000", objs, time.Now())
	require.NoError(b, err)
	b.Logf("%d objects, %d bytes (%.0f B an object)", stats.Count, stats.Bytes, float64(stats.Bytes)/n)

	b.Run("Save", func(b *testing.B) {
		b.SetBytes(stats.Bytes)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := persist.Save(b.Context(), st, id, codec, "21000", objs, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Load", func(b *testing.B) {
		b.SetBytes(stats.Bytes)
		b.ReportAllocs()
		for b.Loop() {
			snap, err := persist.Load(b.Context(), st, id, codec)
			if err != nil {
				b.Fatal(err)
			}
			if len(snap.Items) != n {
				b.Fatalf("%d items", len(snap.Items))
			}
		}
	})
}
