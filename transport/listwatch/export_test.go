package listwatch

import (
	"context"
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// WatchWithSilenceForTest is Watch with a silence bound given directly.
func (t *Transport) WatchWithSilenceForTest(ctx context.Context, c fsm.Command, silence time.Duration, emit func(fsm.Event) bool) {
	t.watch(ctx, c, silence, emit)
}
