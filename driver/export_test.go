package driver

import (
	"context"
	"io"

	"github.com/rewatch/rewatch/fsm"
)

// DecodeStreamForTest exposes the frame decoder to the fuzz target.
func DecodeStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	d := &driver{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	d.decodeStream(context.Background(), body, 1, emit)
}
