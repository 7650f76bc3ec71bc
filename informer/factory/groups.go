package factory

// The API groups of client-go's SharedInformerFactory. Each is client-go's own generated
// package, given this factory as its internalinterfaces.SharedInformerFactory: its typed
// informers ask the factory's InformerFor for their informer, which is rewatch's.

import (
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
)

// Admissionregistration is client-go's admissionregistration informers, every one rewatch's.
func (f *Factory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.namespace, f.tweak)
}

// Internal is client-go's apiserverinternal informers, every one rewatch's.
func (f *Factory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.namespace, f.tweak)
}

// Apps is client-go's apps informers, every one rewatch's.
func (f *Factory) Apps() apps.Interface { return apps.New(f, f.namespace, f.tweak) }

// Autoscaling is client-go's autoscaling informers, every one rewatch's.
func (f *Factory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.namespace, f.tweak)
}

// Batch is client-go's batch informers, every one rewatch's.
func (f *Factory) Batch() batch.Interface { return batch.New(f, f.namespace, f.tweak) }

// Certificates is client-go's certificates informers, every one rewatch's.
func (f *Factory) Certificates() certificates.Interface {
	return certificates.New(f, f.namespace, f.tweak)
}

// Coordination is client-go's coordination informers, every one rewatch's.
func (f *Factory) Coordination() coordination.Interface {
	return coordination.New(f, f.namespace, f.tweak)
}

// Core is client-go's core informers, every one rewatch's.
func (f *Factory) Core() core.Interface { return core.New(f, f.namespace, f.tweak) }

// Discovery is client-go's discovery informers, every one rewatch's.
func (f *Factory) Discovery() discovery.Interface { return discovery.New(f, f.namespace, f.tweak) }

// Events is client-go's events informers, every one rewatch's.
func (f *Factory) Events() events.Interface { return events.New(f, f.namespace, f.tweak) }

// Extensions is client-go's extensions informers, every one rewatch's.
func (f *Factory) Extensions() extensions.Interface { return extensions.New(f, f.namespace, f.tweak) }

// Flowcontrol is client-go's flowcontrol informers, every one rewatch's.
func (f *Factory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.namespace, f.tweak)
}

// Lifecycle is client-go's lifecycle informers, every one rewatch's.
func (f *Factory) Lifecycle() lifecycle.Interface { return lifecycle.New(f, f.namespace, f.tweak) }

// Networking is client-go's networking informers, every one rewatch's.
func (f *Factory) Networking() networking.Interface { return networking.New(f, f.namespace, f.tweak) }

// Node is client-go's node informers, every one rewatch's.
func (f *Factory) Node() node.Interface { return node.New(f, f.namespace, f.tweak) }

// Policy is client-go's policy informers, every one rewatch's.
func (f *Factory) Policy() policy.Interface { return policy.New(f, f.namespace, f.tweak) }

// Rbac is client-go's rbac informers, every one rewatch's.
func (f *Factory) Rbac() rbac.Interface { return rbac.New(f, f.namespace, f.tweak) }

// Resource is client-go's resource informers, every one rewatch's.
func (f *Factory) Resource() resource.Interface { return resource.New(f, f.namespace, f.tweak) }

// Scheduling is client-go's scheduling informers, every one rewatch's.
func (f *Factory) Scheduling() scheduling.Interface { return scheduling.New(f, f.namespace, f.tweak) }

// Storage is client-go's storage informers, every one rewatch's.
func (f *Factory) Storage() storage.Interface { return storage.New(f, f.namespace, f.tweak) }

// Storagemigration is client-go's storagemigration informers, every one rewatch's.
func (f *Factory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.namespace, f.tweak)
}
