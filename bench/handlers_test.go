package bench

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
)

// Handlers: events per second through an informer with 1, 10 and 100 handlers, and the cost of
// adding and removing handlers while events flow; client-go's informer and rewatch's over the
// same ListerWatcher, so the difference is the informer alone. Run with:
//
//	go test -run '^$' -bench 'InformerHandlers|InformerHandlerChurn' -benchmem -count 6 ./bench/

// handlerEvents is the stream's length for the handler benchmarks: with 100 handlers each
// event is 100 calls.
const handlerEvents = 20000

type informerKind struct {
	name string
	new  func(lw *cache.ListWatch) cache.SharedIndexInformer
}

var informerKinds = []informerKind{
	{"client-go", func(lw *cache.ListWatch) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &corev1.ConfigMap{}, 0, indexers)
	}},
	{"rewatch", func(lw *cache.ListWatch) cache.SharedIndexInformer {
		quiet := informer.Options{Logger: slog.New(slog.DiscardHandler)}
		return informer.WithOptions(quiet)(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &corev1.ConfigMap{}, 0, indexers)
	}},
}

// decodedEvents is the stream of WatchStream as decoded objects: n changes to names ConfigMaps
// of about 1 KiB, the first of each an add.
func decodedEvents(n, names int) []watch.Event {
	pad := strings.Repeat("y", 850)
	events := make([]watch.Event, n)
	for i := range events {
		typ := watch.Modified
		if i < names {
			typ = watch.Added
		}
		events[i] = watch.Event{Type: typ, Object: &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i%names), Namespace: "bench",
				ResourceVersion: strconv.Itoa(i + 2), Labels: map[string]string{"app": "bench"}},
			Data: map[string]string{"payload": pad, "seq": strconv.Itoa(i)},
		}}
	}
	return events
}

// memoryListWatch lists nothing at resourceVersion 1 and watches events, already decoded, then
// holds the watch open: what the informer costs, without a wire or a decoder in front of it.
func memoryListWatch(events []watch.Event) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			ch := make(chan watch.Event)
			w := watch.NewProxyWatcher(ch)
			if o.ResourceVersion != "1" {
				return w, nil // a re-watch after the stream: open, and nothing more
			}
			go func() {
				for _, e := range events {
					select {
					case ch <- e:
					case <-w.StopChan():
						return
					case <-ctx.Done():
						return
					}
				}
			}()
			return w, nil
		},
	}
}

// countTo is a handler that closes done once it has been called n times.
func countTo(n int64, done chan struct{}) cache.ResourceEventHandler {
	var seen atomic.Int64
	tick := func() {
		if seen.Add(1) == n {
			close(done)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { tick() }, UpdateFunc: func(_, _ any) { tick() }, DeleteFunc: func(any) { tick() },
	}
}

// countingCalls is a handler that counts its calls.
func countingCalls(calls *atomic.Int64) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { calls.Add(1) }, UpdateFunc: func(_, _ any) { calls.Add(1) }, DeleteFunc: func(any) { calls.Add(1) },
	}
}

// BenchmarkInformerHandlers: the time for handlerEvents events to reach every one of h
// handlers; events/s counts each event once, however many handlers it reaches.
func BenchmarkInformerHandlers(b *testing.B) {
	events := decodedEvents(handlerEvents, 1000)
	for _, handlers := range []int{1, 10, 100} {
		for _, kind := range informerKinds {
			b.Run(fmt.Sprintf("handlers=%d/informer=%s", handlers, kind.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					inf := kind.new(memoryListWatch(events))
					var all sync.WaitGroup
					for range handlers {
						done := make(chan struct{})
						if _, err := inf.AddEventHandler(countTo(handlerEvents, done)); err != nil {
							b.Fatal(err)
						}
						all.Go(func() { <-done })
					}
					everyone := make(chan struct{})
					go func() { all.Wait(); close(everyone) }()
					runUntil(b, func(ctx context.Context) error { inf.RunWithContext(ctx); return nil }, everyone, 5*time.Minute, "stream not delivered to every handler within 5 minutes")
				}
				b.ReportMetric(float64(handlerEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// churnEvents is the stream the churn benchmark delivers while handlers come and go.
const churnEvents = 10000

// Churn: churners goroutines each add churnRounds handlers while the stream flows, keeping at
// most churnWindow of its own registered and removing the oldest (cache.ShutDownEventHandler:
// removed and no call running) when it adds one more; the rest are removed at the end.
const (
	churners    = 2
	churnRounds = 250
	churnWindow = 10
)

// BenchmarkInformerHandlerChurn: the time for churnEvents changes to reach a handler that is
// there throughout while 500 handlers are added (each given the cache's 1,000 objects) and
// removed concurrently, until both are done.
func BenchmarkInformerHandlerChurn(b *testing.B) {
	events := decodedEvents(churnEvents, 1000)
	for _, kind := range informerKinds {
		b.Run("informer="+kind.name, func(b *testing.B) {
			b.ReportAllocs()
			var maxLive atomic.Int64
			for b.Loop() {
				inf := kind.new(memoryListWatch(events))
				streamDone := make(chan struct{})
				if _, err := inf.AddEventHandler(countTo(churnEvents, streamDone)); err != nil {
					b.Fatal(err)
				}
				allDone := make(chan struct{})
				var live atomic.Int64
				var churn sync.WaitGroup
				var calls atomic.Int64
				errs := make(chan error, churners)
				runUntil(b, func(ctx context.Context) error {
					var run sync.WaitGroup
					run.Go(func() { inf.RunWithContext(ctx) })
					for range churners {
						churn.Go(func() {
							var mine []cache.ResourceEventHandlerRegistration
							for range churnRounds {
								reg, err := inf.AddEventHandler(countingCalls(&calls))
								if err != nil {
									errs <- err
									return
								}
								mine = append(mine, reg)
								if n := live.Add(1); n > maxLive.Load() {
									maxLive.Store(n)
								}
								if len(mine) > churnWindow {
									if err := cache.ShutDownEventHandler(inf, mine[0]); err != nil {
										errs <- err
										return
									}
									live.Add(-1)
									mine = mine[1:]
								}
							}
							for _, reg := range mine {
								if err := cache.ShutDownEventHandler(inf, reg); err != nil {
									errs <- err
									return
								}
								live.Add(-1)
							}
						})
					}
					go func() {
						churn.Wait()
						<-streamDone
						close(allDone)
					}()
					run.Wait()
					return nil
				}, allDone, 10*time.Minute, "churn not done within 10 minutes")
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(churnEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(maxLive.Load()), "max-handlers")
		})
	}
}
