package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Wire-format throughput: the same watch stream of typed objects in JSON and in protobuf (each
// encoded by apimachinery's own serializers, as kube-apiserver encodes them), for ~1.1 KiB
// ConfigMaps and ~6 KiB Pods as a Deployment controller sees them; rewatch, client-go's
// Reflector over a typed REST client configured for that format, and decoding alone. One op is
// the whole stream: BENCH_EVENTS (default 100000) ConfigMaps or BENCH_POD_EVENTS (default
// 20000) Pods. Run with:
//
//	go test -run '^$' -bench WireThroughput -benchmem -benchtime 1x -count 6 ./bench/ | benchstat -col /runner -
func BenchmarkWireThroughput(b *testing.B) {
	for _, object := range []string{"configmap", "pod"} {
		for _, media := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
			name := map[string]string{runtime.ContentTypeJSON: "json", runtime.ContentTypeProtobuf: "protobuf"}[media]
			runners := []string{"decode-only", "client-go", "rewatch-typed"}
			if media == runtime.ContentTypeJSON {
				runners = append(runners, "rewatch-unstructured")
			}
			for _, runner := range runners {
				b.Run(fmt.Sprintf("object=%s/wire=%s/runner=%s", object, name, runner), func(b *testing.B) {
					benchWire(b, object, media, runner)
				})
			}
		}
	}
}

func podEvents() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_POD_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// wireCodec is one of the server's formats: its body serializer and its stream framing.
type wireCodec struct {
	media string
	info  runtime.SerializerInfo
}

func codecFor(media string) wireCodec {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), media)
	if !ok {
		panic("no serializer for " + media)
	}
	return wireCodec{media: media, info: info}
}

func (c wireCodec) encode(obj runtime.Object) []byte {
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(c.info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		panic(err)
	}
	return b
}

// stream is n watch events of object in this format: names distinct objects added, then
// modified in turn.
func (c wireCodec) stream(object string, n, names int) []byte {
	var b bytes.Buffer
	enc := streaming.NewEncoder(c.info.StreamSerializer.Framer.NewFrameWriter(&b), c.info.StreamSerializer.Serializer)
	for i := range n {
		typ := watch.Modified
		if i < names {
			typ = watch.Added
		}
		var obj runtime.Object
		if object == "pod" {
			obj = benchPod(i%names, i+2)
		} else {
			obj = benchConfigMap(i%names, i+2)
		}
		if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: c.encode(obj)}}); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func benchConfigMap(i, rv int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)),
			ResourceVersion: strconv.Itoa(rv), CreationTimestamp: metav1.Unix(1767225600, 0), Labels: map[string]string{"app": "bench"}},
		Data: map[string]string{"payload": strings.Repeat("y", 850), "seq": strconv.Itoa(rv)},
	}
}

// benchPod is a Pod of a Deployment's ReplicaSet, as its controller sees it once it runs: owner
// reference, managedFields of three managers, two containers with env, ports, probes,
// resources and mounts, projected service-account volume, tolerations and a status.
func benchPod(i, rv int) *corev1.Pod {
	name := fmt.Sprintf("web-7d4b9c8f6d-%05d", i)
	t := metav1.Unix(1767225600, 0)
	yes := true
	env := make([]corev1.EnvVar, 0, 12)
	for k := range 10 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%02d", k), Value: fmt.Sprintf("value-%02d-of-the-deployment", k)})
	}
	env = append(env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	container := func(n, image string, port int32) corev1.Container {
		return corev1.Container{
			Name: n, Image: image, Env: env, ImagePullPolicy: corev1.PullIfNotPresent,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(port)}}, PeriodSeconds: 5},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}}, InitialDelaySeconds: 10},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"},
				{Name: "kube-api-access-x2x9z", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, GenerateName: "web-7d4b9c8f6d-", Namespace: "bench", UID: types.UID(fmt.Sprintf("6a1f0c2e-0000-4000-8000-%012d", i)),
			ResourceVersion: strconv.Itoa(rv), CreationTimestamp: t,
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6d", "tier": "frontend"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d", UID: "0b6f2a4c-1111-4222-8333-444455556666", Controller: &yes, BlockOwnerDeletion: &yes}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1",
					FieldsV1: fields(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0b6f2a4c-1111-4222-8333-444455556666\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:env":{},"f:image":{},"f:name":{},"f:ports":{},"f:resources":{}},"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}},"f:volumes":{}}}`)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("web", "registry.example.com/team/web:v1.42.0", 8080), container("sidecar", "registry.example.com/team/proxy:v2.3.1", 9090)},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "kube-api-access-x2x9z", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo(int64(3607))}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}},
			},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "web", NodeName: fmt.Sprintf("node-%03d", i%100),
			SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: ptrTo(int64(30)),
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.7", PodIP: fmt.Sprintf("10.244.%d.%d", i/250%250, i%250), StartTime: &t, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", Ready: true, Image: "registry.example.com/team/web:v1.42.0", ImageID: "registry.example.com/team/web@sha256:" + strings.Repeat("ab", 32),
					ContainerID: "containerd://" + strings.Repeat("cd", 32), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}},
				{Name: "sidecar", Ready: true, Image: "registry.example.com/team/proxy:v2.3.1", ImageID: "registry.example.com/team/proxy@sha256:" + strings.Repeat("ef", 32),
					ContainerID: "containerd://" + strings.Repeat("01", 32), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}},
			},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// streams holds each generated stream for the rest of the process: -count repeats a
// sub-benchmark, and encoding 100,000 objects takes longer than decoding them.
var (
	streamsMu sync.Mutex
	streams   = map[string][]byte{}
)

// cached returns the body generated for key, generating it with gen the first time.
func cached(key string, gen func() []byte) []byte {
	streamsMu.Lock()
	defer streamsMu.Unlock()
	if b, ok := streams[key]; ok {
		return b
	}
	b := gen()
	streams[key] = b
	return b
}

// wireServer answers like kube-apiserver for a built-in type: in protobuf when the request lists
// it first, else in JSON; an empty LIST at resourceVersion 1, and on a watch the stream in the
// negotiated format, held open until the client goes away.
func wireServer(object string, streams map[string][]byte) *httptest.Server {
	lists := map[string][]byte{}
	for media := range streams {
		c := codecFor(media)
		if object == "pod" {
			lists[media] = c.encode(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
		} else {
			lists[media] = c.encode(&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
		}
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		media := runtime.ContentTypeJSON
		if strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
			media = runtime.ContentTypeProtobuf
		}
		if !serveWatch(w, r, media+";stream=watch", streams[media]) {
			w.Header().Set("Content-Type", media)
			_, _ = w.Write(lists[media])
		}
	}))
}

func benchWire(b *testing.B, object, media, runner string) {
	n, names := streamEvents(), 1000
	if object == "pod" {
		n = podEvents()
	}
	c := codecFor(media)
	stream := cached(fmt.Sprintf("%s %s %d %d", c.media, object, n, names), func() []byte { return c.stream(object, n, names) })
	srv := wireServer(object, map[string][]byte{media: stream})
	defer srv.Close()
	resource := map[string]string{"pod": "pods", "configmap": "configmaps"}[object]
	var example runtime.Object = &corev1.ConfigMap{}
	if object == "pod" {
		example = &corev1.Pod{}
	}
	format := map[string]rewatch.Format{runtime.ContentTypeJSON: rewatch.FormatJSON, runtime.ContentTypeProtobuf: rewatch.FormatProtobuf}[media]

	var run func(ctx context.Context, url string, store *CountingStore) error
	newInner := func() InnerStore { return driver.NewMemStore() }
	switch runner {
	case "decode-only":
		newInner = func() InnerStore { return nil }
		run = func(ctx context.Context, url string, store *CountingStore) error {
			return decodeOnly(ctx, url+"/api/v1/namespaces/bench/"+resource+"?watch=1", c, store)
		}
	case "client-go":
		newInner = func() InnerStore { return cache.NewStore(cache.MetaNamespaceKeyFunc) }
		run = func(ctx context.Context, url string, store *CountingStore) error {
			return runClientGoTyped(ctx, url, media, resource, example, store)
		}
	case "rewatch-typed", "rewatch-unstructured":
		run = func(ctx context.Context, url string, store *CountingStore) error {
			conn := rewatch.Connection{Client: &http.Client{}, Server: url, Format: format,
				Resource: rewatch.Resource{Version: "v1", Resource: resource, Namespace: "bench"}}
			if runner == "rewatch-typed" {
				conn.Decoder = httpapi.Typed(scheme.Scheme)
			}
			r, err := rewatch.New(rewatch.Config{Connection: conn, Store: store})
			if err != nil {
				return err
			}
			return r.Run(ctx)
		}
	}
	runStream(b, srv.URL, n, int64(len(stream)), run, newInner)
}

// runStream runs a reflector through a whole stream of n events from the server at url, once
// per op, and reports events/s, allocs/event and the process's CPU per event (client and
// local server alike: less sensitive than events/s to how a pipeline's goroutines share two
// busy cores).
func runStream(b *testing.B, url string, n int, size int64, run func(ctx context.Context, url string, store *CountingStore) error, newInner func() InnerStore) {
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	var ms0, ms1 runtimeMemStats
	ms0.read()
	cpu0 := processCPU()
	for b.Loop() {
		store := &CountingStore{InnerStore: newInner(), Target: int64(n), Done: make(chan struct{})}
		runUntil(b, func(ctx context.Context) error { return run(ctx, url, store) }, store.Done, 5*time.Minute, "stream not consumed within 5 minutes")
	}
	ms1.read()
	cpu := processCPU() - cpu0
	b.StopTimer()
	ops := float64(b.N)
	b.ReportMetric(float64(n)*ops/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(ms1.mallocs-ms0.mallocs)/(ops*float64(n)), "allocs/event")
	b.ReportMetric(cpu.Seconds()*1e6/(ops*float64(n)), "cpu-µs/event")
}

// decodeOnly is the practical limit: apimachinery's framer and streaming decoder for the
// format, each frame into metav1.WatchEvent, its object into its Go type; no store.
func decodeOnly(ctx context.Context, url string, c wireCodec, store *CountingStore) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", c.media)
	s := c.info.StreamSerializer
	objects := scheme.Codecs.UniversalDeserializer()
	return decodeWatchEvents(req, func(body io.ReadCloser) streaming.Decoder {
		return streaming.NewDecoder(s.Framer.NewFrameReader(body), s.Serializer)
	}, func(raw []byte) error {
		_, _, err := objects.Decode(raw, nil, nil)
		return err
	}, store)
}

// decodeWatchEvents is the decode-only baseline's loop: each frame of the watch stream into a
// metav1.WatchEvent, its object through decodeObject, one tick per event, until the stream or
// the request's context ends.
func decodeWatchEvents(req *http.Request, newDecoder func(io.ReadCloser) streaming.Decoder, decodeObject func([]byte) error, store *CountingStore) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := newDecoder(resp.Body)
	for {
		var we metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &we); err != nil {
			if req.Context().Err() != nil || err == io.EOF {
				return nil
			}
			return err
		}
		if err := decodeObject(we.Object.Raw); err != nil {
			return err
		}
		store.tick()
	}
}

// runClientGoTyped runs client-go's Reflector over a typed REST client configured for media,
// as a clientset built with ContentType protobuf is (kube-controller-manager's configuration),
// in LIST+WATCH mode with client-side rate limiting off.
func runClientGoTyped(ctx context.Context, url, media, resource string, example runtime.Object, store cache.ReflectorStore) error {
	lw, err := typedListWatch(url, media, resource)
	if err != nil {
		return err
	}
	cache.NewReflector(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), example, store, 0).RunWithContext(ctx)
	return nil
}

// typedListWatch lists and watches resource in namespace "bench" at url through a typed REST
// client configured for media, with client-side rate limiting off.
func typedListWatch(url, media, resource string) (*cache.ListWatch, error) {
	rc, err := rest.RESTClientFor(&rest.Config{Host: url, APIPath: "/api", QPS: -1, ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
		ContentType: media, AcceptContentTypes: media,
	}})
	if err != nil {
		return nil, err
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return rc.Get().Namespace("bench").Resource(resource).VersionedParams(&o, scheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return rc.Get().Namespace("bench").Resource(resource).VersionedParams(&o, scheme.ParameterCodec).Watch(ctx)
		},
	}, nil
}

// TestWireStreamShape keeps the generators honest: a Pod is 4–8 KiB in JSON, a ConfigMap about
// 1 KiB, and each format's stream decodes back into the objects.
func TestWireStreamShape(t *testing.T) {
	for object, size := range map[string][2]int{"pod": {4 << 10, 8 << 10}, "configmap": {1000, 1300}} {
		s := codecFor(runtime.ContentTypeJSON).stream(object, 10, 4)
		if n := len(s) / 10; n < size[0] || n > size[1] {
			t.Fatalf("%s event is %d bytes in JSON, want %d–%d", object, n, size[0], size[1])
		}
		p := codecFor(runtime.ContentTypeProtobuf).stream(object, 10, 4)
		t.Logf("%s: %d B/event in JSON, %d in protobuf", object, len(s)/10, len(p)/10)
	}
}
