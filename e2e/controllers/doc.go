// Package controllers holds end-to-end tests of rewatch's informer inside the controller
// frameworks people run: a controller-runtime manager whose cache builds its informers with
// informer.NewSharedIndexInformer, and a client-go SharedInformerFactory given rewatch's
// informer through InformerFor, both on the real kube-apiserver and on the simulator, through
// the fault proxy. It runs only when asked (REWATCH_E2E=1, or CI=true; scripts/test.sh sets
// it), since it starts a kube-apiserver and etcd. It is a module of its own so that controller-runtime never enters the
// library's go.mod.
package controllers
