package informer_test

import (
	"fmt"
	"log/slog"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/sim"
)

// In a client-go SharedInformerFactory, InformerFor makes rewatch's informer the factory's own
// for the type: its lister, WaitForCacheSync and event handlers work unchanged. (In
// controller-runtime, cache.Options{NewInformer: informer.NewSharedIndexInformer} does the
// same for every informer of a manager's cache.)
func ExampleNewInformerFunc() {
	server := sim.New(sim.Options{})
	url, err := server.Start()
	if err != nil {
		panic(err)
	}
	defer server.Close()
	for _, name := range []string{"a", "b"} {
		if _, err := server.Create(sim.ConfigMaps, "default", name, map[string]string{"k": name}); err != nil {
			panic(err)
		}
	}
	client, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	if err != nil {
		panic(err)
	}

	factory := informers.NewSharedInformerFactory(client, 0)
	factory.InformerFor(&corev1.ConfigMap{}, informer.NewInformerFunc(&corev1.ConfigMap{},
		informer.Options{Logger: slog.New(slog.DiscardHandler)}))
	configMaps := factory.Core().V1().ConfigMaps()
	added := make(chan string, 10)
	if _, err := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { added <- obj.(*corev1.ConfigMap).Name },
	}); err != nil {
		panic(err)
	}

	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	all, err := configMaps.Lister().List(labels.Everything())
	if err != nil {
		panic(err)
	}
	var names []string
	for _, cm := range all {
		names = append(names, cm.Name)
	}
	sort.Strings(names)
	fmt.Println("listed:", names)
	seen := []string{<-added, <-added}
	sort.Strings(seen)
	fmt.Println("handler added:", seen)
	// Output:
	// listed: [a b]
	// handler added: [a b]
}
