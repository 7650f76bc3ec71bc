package journal

import (
	"bytes"
	"testing"
)

// FuzzReplay feeds arbitrary bytes to the journal reader and replayer: a corrupt or hostile
// journal must give an error, never a panic.
func FuzzReplay(f *testing.F) {
	header := `{"format":"rewatch-journal/v2","started":"2026-01-01T00:00:00Z","config":{"backoff":{"Duration":800000000,"Factor":2,"Jitter":1,"Steps":38,"Cap":30000000000},"internalErrorWindow":30000000000,"internalErrorRewatches":3,"resumeRVLifetime":60000000000,"retryAfterCap":300000000000,"pageSize":500,"quickWatch":1000000000,"quickEndsBeforeBackoff":2,"watchTimeoutMin":300000000000,"watchTimeoutMax":600000000000,"seed":1}}` + "\n"
	f.Add([]byte(header + `{"seq":1,"event":{"kind":"start","now":"2026-01-01T00:00:00Z"},"from":"Listing","to":"Listing","cause":"start","commands":[{"kind":"list","request":1,"rv":"0","rvSet":true,"limit":500}]}` + "\n"))
	f.Add([]byte(header + `{"seq":1,"event":{"kind":"list-page","now":"2026-01-01T00:00:00Z","request":9},"from":"Listing","to":"Listing"}` + "\n"))
	f.Add([]byte(header + `{"seq":1,"event":{"kind":"watch-error","now":"x"},"from":"Nowhere"}`))
	f.Add([]byte(`{"format":"rewatch-journal/v2","config":{"watchTimeoutMin":-1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Replay(bytes.NewReader(b), ReplayOptions{Check: true})
	})
}
