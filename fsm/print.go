package fsm

import (
	"strconv"
	"strings"
)

// The canonical printers: one line per event (event_text.go, which reads them back too),
// command and snapshot, used by golden transcripts, the CLI and logs alike, so that all of
// them read the same.

// String prints a command as the driver will perform it.
func (c Command) String() string {
	var b strings.Builder
	b.WriteString(c.Kind.String())
	switch c.Kind {
	case CmdListPage:
		field(&b, "request", strconv.FormatUint(c.Request, 10))
		if c.Continue != "" {
			field(&b, "continue", strconv.Quote(c.Continue))
		} else {
			field(&b, "rv", strconv.Quote(c.ResourceVersion))
		}
		if c.Match != "" {
			field(&b, "match", c.Match)
		}
		if c.Limit > 0 {
			field(&b, "limit", strconv.FormatInt(c.Limit, 10))
		} else {
			b.WriteString(" unpaginated")
		}
		if c.AgainstSnapshot {
			b.WriteString(" against-snapshot")
		}
	case CmdOpenWatch:
		field(&b, "request", strconv.FormatUint(c.Request, 10))
		field(&b, "rv", strconv.Quote(c.ResourceVersion))
		if c.Match != "" {
			field(&b, "match", c.Match)
		}
		if c.SendInitialEvents {
			b.WriteString(" sendInitialEvents")
		}
		if c.FreshConnection {
			b.WriteString(" fresh-connection")
		}
		field(&b, "timeout", strconv.FormatInt(c.TimeoutSeconds, 10)+"s")
	case CmdCancelRequest:
		field(&b, "request", strconv.FormatUint(c.Request, 10))
	case CmdArmTimer:
		field(&b, "timer", strconv.FormatUint(c.Timer, 10))
		field(&b, "delay", c.Delay.String())
		field(&b, "reason", c.Reason.String())
	case CmdAsk:
		field(&b, "request", strconv.FormatUint(c.Request, 10))
		field(&b, "hook", c.Hook.String())
	case CmdCancelTimer:
		field(&b, "timer", strconv.FormatUint(c.Timer, 10))
	case CmdWatchDeadline:
		field(&b, "request", strconv.FormatUint(c.Request, 10))
		field(&b, "timer", strconv.FormatUint(c.Timer, 10))
		field(&b, "delay", c.Delay.String())
	case CmdStage:
		switch {
		case c.Type != 0:
			field(&b, "type", c.Type.String())
			field(&b, "key", c.Key)
		case c.Key != "": // one LIST item
			field(&b, "key", c.Key)
		default:
			field(&b, "items", strconv.Itoa(c.ItemCount))
		}
		if c.Hold {
			b.WriteString(" hold")
		}
	case CmdDiscardStaged:
		if c.ItemCount > 0 { // the items of a page that broke off
			field(&b, "items", strconv.Itoa(c.ItemCount))
		}
	case CmdReplaceStore:
		field(&b, "rv", strconv.Quote(c.ResourceVersion))
	case CmdRestore:
		field(&b, "rv", strconv.Quote(c.ResourceVersion))
		field(&b, "items", strconv.Itoa(c.ItemCount))
	case CmdApply:
		field(&b, "type", c.Type.String())
		field(&b, "key", c.Key)
		field(&b, "rv", strconv.Quote(c.ResourceVersion))
	}
	return b.String()
}

// String prints the parts of a snapshot a reader of a transcript cares about.
func (s Snapshot) String() string {
	var b strings.Builder
	b.WriteString(s.State.String())
	if s.State == Backoff {
		b.WriteString("→" + s.Wait.Next.String())
	}
	field(&b, "rv", strconv.Quote(s.LastRV))
	if s.RVUnusable {
		b.WriteString(" rv-unusable")
	}
	if s.Wait.Attempt > 0 {
		field(&b, "attempt", strconv.Itoa(s.Wait.Attempt))
	}
	if s.RetryAfter.Repeats > 0 {
		field(&b, "retry-after-repeats", strconv.Itoa(s.RetryAfter.Repeats))
	}
	if s.InternalErrors.Live(&s.Moments) {
		// The streak's re-watches so far; its age is the transcript's clock minus its start.
		field(&b, "internal-streak", strconv.Itoa(s.InternalErrors.Rewatches))
	}
	if s.Resume.Verifying {
		b.WriteString(" verifying-snapshot")
	}
	if s.Resume.CatchingUp {
		// Synced waits for the watch to reach the consistent read taken at start.
		field(&b, "catching-up-to", strconv.FormatUint(s.Resume.Target, 10))
	}
	if s.State == Backoff && s.List.Continue != "" {
		field(&b, "resume-page", strconv.Quote(s.List.Continue))
	}
	return b.String()
}

func field(b *strings.Builder, k, v string) {
	b.WriteByte(' ')
	b.WriteString(k)
	b.WriteByte('=')
	b.WriteString(v)
}
