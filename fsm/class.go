package fsm

// Class is what a failure means for the reflector, independent of where it happened: the
// reading transitions.classify gives a Failure before the state picks its cause. Which answers
// a class takes is said here, once (classify implements it); which classes a cause reads is
// its rule's (fsm.CauseFacts.Classes), and a cause's comment names its classes, not answers.
type Class uint8

const (
	NoClass Class = iota
	// ClassBusy: the server asks us to come back later (429, 503, 504 server timeout). Retry
	// the same request after Retry-After or backoff; never LIST because of it.
	ClassBusy
	// ClassInternal: a 500 InternalError, an unknown 5xx, a Status of unknown meaning, or a frame
	// that would not decode. Retry inside a bounded window, then relist.
	ClassInternal
	// ClassExpired: 410 Gone / Expired. The resourceVersion is too old to resume from.
	ClassExpired
	// ClassTooLargeRV: 504 with cause ResourceVersionTooLarge. The RV is ahead of the server.
	ClassTooLargeRV
	// ClassTransport: the connection failed before any response.
	ClassTransport
	// ClassRejected: 401, 403, 404 and every other client error: the request itself is refused.
	ClassRejected

	numClasses
)

var classNames = enumNames[Class]{typ: "Class", kind: "class",
	names: []string{"", "busy", "internal", "expired", "too-large-rv", "transport", "rejected"}}

func (c Class) String() string                { return classNames.String(c) }
func (c Class) MarshalText() ([]byte, error)  { return classNames.MarshalText(c) }
func (c *Class) UnmarshalText(b []byte) error { return classNames.UnmarshalText(c, b) }

// Classes is a set of classes.
type Classes uint8

// ClassesOf makes a set.
func ClassesOf(cs ...Class) Classes {
	var set Classes
	for _, c := range cs {
		set |= 1 << c
	}
	return set
}

// Has reports whether c is in the set.
func (set Classes) Has(c Class) bool { return c < numClasses && set&(1<<c) != 0 }

// List returns the set's classes in declaration order.
func (set Classes) List() []Class {
	var out []Class
	for c := NoClass + 1; c < numClasses; c++ {
		if set.Has(c) {
			out = append(out, c)
		}
	}
	return out
}
