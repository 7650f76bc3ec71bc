// Package transporttest holds helpers shared by the transports' tests.
package transporttest

import (
	"context"

	"github.com/rewatch/rewatch/fsm"
)

// Lister is what performs a LIST page: a transport.
type Lister interface {
	List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool)
}

// ListOnce performs one LIST page and folds what it emits into one event, as a page decoded
// whole would have been: the items into Items. ok is false when nothing ended the page.
func ListOnce(tr Lister, c fsm.Command) (fsm.Event, bool) {
	var items []any
	var end fsm.Event
	ok := false
	tr.List(context.Background(), c, func(e fsm.Event) bool {
		if e.Kind == fsm.EvListItem {
			items = append(items, e.Object)
			return true
		}
		end, ok = e, true
		return true
	})
	if end.Kind == fsm.EvListPage && end.Items == nil {
		if items == nil {
			items = []any{}
		}
		end.Items = items
	}
	return end, ok
}
