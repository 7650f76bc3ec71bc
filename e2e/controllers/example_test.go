package controllers_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rewatch/rewatch/informer"
)

// A controller-runtime manager whose cache builds every informer with rewatch: one option of
// the cache, and the controllers, clients and listers on top are unchanged. A watch failure
// the API server recovers from (a 429, an InternalError, a dropped connection) then costs a
// re-watch instead of a LIST of everything the manager caches (docs/semantics.md). It needs a
// cluster, so it is compiled but not run; TestControllerRuntimeManagerThroughTheStorm runs it
// against the real kube-apiserver.
func Example_controllerRuntime() {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"} // ctrl.GetConfigOrDie() in a real program
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Cache: crcache.Options{NewInformer: informer.NewSharedIndexInformer},
	})
	if err != nil {
		panic(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			fmt.Println("reconcile", req.NamespacedName)
			return reconcile.Result{}, nil
		}))
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}
