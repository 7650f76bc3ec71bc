package fsm

// A streak is something counted in a row — refused watches, 410s, quick ends, InternalErrors —
// until a moment of the watch's life ends it: a stream opened, a frame, progress, a listing's
// full state. Nobody resets a streak. The step counts the moments as they pass (Moments), a
// streak notes how many of the moments that end it had passed when it was last counted, and
// it is over once another one has. So the rule that counts a streak says, where it declares
// the streak, what ends it, and the effects that bring a moment about only count the moment:
// no shared effect resets a rule's counter, and the hot path pays one increment per frame
// whatever the rules count (docs/design.md, "How to add a reaction to a server answer").

// Moments counts, since the start, each moment of the watch's life that can end a streak.
type Moments struct {
	// Opened counts the streams the server opened (a watch, or a watch-list's stream): it
	// accepted the request.
	Opened uint64 `json:"opened,omitempty"`
	// Frames counts the frames of watches (events and bookmarks, not a watch-list's initial
	// events).
	Frames uint64 `json:"frames,omitempty"`
	// Progress counts the frames that moved the resume RV (docs/semantics.md, "reset on
	// progress").
	Progress uint64 `json:"progress,omitempty"`
	// Listings counts the full states a listing handed the store.
	Listings uint64 `json:"listings,omitempty"`
}

// MomentSet names the moments that end a streak.
type MomentSet uint8

const (
	// AtOpen: a stream opened (Moments.Opened).
	AtOpen MomentSet = 1 << iota
	// AtFrame: a watch delivered a frame (Moments.Frames).
	AtFrame
	// AtProgress: a watch frame moved the resume RV (Moments.Progress).
	AtProgress
	// AtListing: a listing's full state replaced the store (Moments.Listings).
	AtListing
)

// passed is how many of the moments in set have passed. The counts only grow, so the sum
// moves exactly when one of them does.
func (m *Moments) passed(set MomentSet) uint64 {
	var n uint64
	if set&AtOpen != 0 {
		n += m.Opened
	}
	if set&AtFrame != 0 {
		n += m.Frames
	}
	if set&AtProgress != 0 {
		n += m.Progress
	}
	if set&AtListing != 0 {
		n += m.Listings
	}
	return n
}

// Streak is a count in a row, ended by the moments Ends names (see the comment at the top of
// this file). Its zero value is no streak.
type Streak struct {
	// N is the count when it was last counted.
	N int `json:"n,omitempty"`
	// Ends are the moments that end it, and At how many of them had passed when it was last
	// counted.
	Ends MomentSet `json:"ends,omitempty"`
	At   uint64    `json:"at,omitempty"`
}

// Count is the streak's length now: 0 once one of its moments has passed since it was last
// counted.
func (k Streak) Count(m *Moments) int {
	if k.N == 0 || m.passed(k.Ends) != k.At {
		return 0
	}
	return k.N
}

// Add counts one more in the streak that ends at ends, starting it again if it was over.
func (k *Streak) Add(m *Moments, ends MomentSet) {
	n := k.Count(m)
	*k = Streak{N: n + 1, Ends: ends, At: m.passed(ends)}
}

// End ends the streak now, whatever its moments.
func (k *Streak) End() { *k = Streak{} }
