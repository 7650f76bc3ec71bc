// Package listwatch is the reflector's transport over a client-go cache.ListerWatcher: the
// ListerWatcher a SharedInformerFactory, controller-runtime's cache or cache.NewListWatchFromClient
// hands out. It turns what the ListerWatcher returns into the events the HTTP transport
// produces, so the same machine makes the same decisions:
//
//   - a List result is an EvListPage (items, resourceVersion, continue token);
//   - an error that carries a Status (*apierrors.StatusError, with details.retryAfterSeconds) is
//     that Status; any other error is a connection-level failure named by its type;
//   - a watch Error event carrying a *metav1.Status is an EvWatchError with that Status;
//   - a closed result channel is the end of the stream.
//
// Like every transport it decides nothing (docs/semantics.md). One difference from HTTP is
// beyond its reach: client-go's watch decoder closes the channel on a reset connection without
// saying why, so a reset mid-stream arrives as a plain end of stream, which the machine answers
// with a re-watch all the same.
package listwatch
