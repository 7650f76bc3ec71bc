package journal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Format names this journal format in every header. v3 is the first that spreads a repeated
// Retry-After and relists at a known RV in one request by default (docs/semantics.md, "a
// repeated Retry-After", "Requests"); v2 the first with the revision-2 wait policy. A v1
// journal would replay to other decisions, so the reader refuses it rather than report false
// differences; a v2 journal is read as what its machine did (see formatV2).
const Format = "rewatch-journal/v3"

// formatV2 journals were written when every Retry-After was waited exactly unless
// RetryAfterSpread was set, and then spread from the first, and when every relist paged. The
// reader replays them with exact waits and paged relists; one recorded with the spread was a
// one-day opt-in that no configuration reproduces now, and is refused.
const formatV2 = "rewatch-journal/v2"

// Header is the first line: what is needed to rebuild the very same machine.
type Header struct {
	Format string `json:"format"`
	// Resource describes what was watched, for humans (e.g. "v1/configmaps in default").
	Resource string `json:"resource,omitempty"`
	// Wire is the wire format the transport asked the server for ("auto (protobuf, json)",
	// "json", "protobuf"); empty in journals written before it was recorded.
	Wire    string       `json:"wire,omitempty"`
	Started time.Time    `json:"started"`
	Config  ConfigRecord `json:"config"`
	// FullCapture says whether records carry whole objects.
	FullCapture bool `json:"fullCapture,omitempty"`
}

// ConfigRecord is transitions.Config as the journal stores it: every field of the policy
// itself, and the backoff by value when it is a backoff.Backoff. Any other backoff policy is
// recorded by its Go type name only; replaying needs it passed back in.
type ConfigRecord struct {
	transitions.Config
	Backoff       *backoff.Backoff `json:"backoff,omitempty"`
	BackoffPolicy string           `json:"backoffPolicy,omitempty"`
}

// RecordConfig captures a machine's effective configuration.
func RecordConfig(c transitions.Config) ConfigRecord {
	r := ConfigRecord{Config: c}
	r.Config.Backoff = nil
	switch b := c.Backoff.(type) {
	case backoff.Backoff:
		r.Backoff = &b
	case *backoff.Backoff:
		cp := *b
		r.Backoff = &cp
	default:
		r.BackoffPolicy = fmt.Sprintf("%T", c.Backoff)
	}
	return r
}

// Policy rebuilds the configuration. policy replaces a backoff that was not recorded by value.
func (r ConfigRecord) Policy(policy backoff.Policy) (transitions.Config, error) {
	c := r.Config
	switch {
	case policy != nil:
		c.Backoff = policy
	case r.Backoff != nil:
		c.Backoff = *r.Backoff
	default:
		return c, fmt.Errorf("journal: recorded with backoff policy %s, which cannot be replayed unless it is passed in", r.BackoffPolicy)
	}
	return c, nil
}

// Record is one event and what it did.
type Record struct {
	Seq   uint64    `json:"seq"`
	Event fsm.Event `json:"event"`
	// Ignored is true when the event belonged to no current request or timer.
	Ignored  bool          `json:"ignored,omitempty"`
	From     fsm.State     `json:"from"`
	To       fsm.State     `json:"to"`
	Cause    fsm.Cause     `json:"cause,omitempty"`
	Commands []fsm.Command `json:"commands,omitempty"`
	// Object and Items hold whole objects under full capture only.
	Object json.RawMessage   `json:"object,omitempty"`
	Items  []json.RawMessage `json:"itemsCaptured,omitempty"`
}
