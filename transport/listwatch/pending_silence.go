package listwatch

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// PENDING: replaced by the watch command's SilenceBound once fsm carries it. Not to be landed.
func pendingSilenceBound(*fsm.Command) time.Duration { return 0 }
