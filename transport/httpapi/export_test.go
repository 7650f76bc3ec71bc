package httpapi

import (
	"context"
	"io"

	"github.com/rewatch/rewatch/fsm"
)

// DecodeStreamForTest exposes the frame decoder to the fuzz target.
func DecodeStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, 1, emit)
}
