// Package sim is an in-process simulated kube-apiserver for ConfigMap-like
// objects. It speaks the LIST/WATCH HTTP protocol the way kube-apiserver
// v1.37 does when reads are served by its watch cache (cacher) over etcd, so
// that client-go's Reflector, and rewatch's own driver, can run against it
// over loopback HTTP and exercise the same code paths as against a real
// cluster: resourceVersion semantics, pagination with continue tokens,
// bookmarks, WatchList, compaction answering 410 Expired, "too large
// resource version" answering 504, and slow watchers being cut off. It
// answers in JSON, and in protobuf for built-in kinds and metadata-only
// (PartialObjectMetadata) requests when the client asks for protobuf first;
// it does not serve CBOR.
//
// Where the simulator departs from the real server, the comment at that
// place says so and why.
package sim
