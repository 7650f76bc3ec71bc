package bench

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The object store's meter tells what became of each upload from the S3 requests alone: a
// whole object put or a multipart upload completed is a snapshot written, a 412 on either is a
// write refused for its condition, a DELETE of an upload is an upload aborted; the parts and
// HEADs count as requests and bytes only.
func TestObjectStoreMeterTellsWhatBecameOfUploads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("If-Match") == "stale":
			w.WriteHeader(http.StatusPreconditionFailed)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			_, _ = w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	m := &ObjectStoreMeter{}
	c := &http.Client{Transport: m}
	do := func(method, query, ifMatch, body string) {
		req, err := http.NewRequest(method, srv.URL+"/bucket/key"+query, strings.NewReader(body))
		require.NoError(t, err)
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	do(http.MethodHead, "", "", "")
	do(http.MethodPut, "", "", "whole")                        // written
	do(http.MethodPut, "", "stale", "whole")                   // refused
	do(http.MethodPost, "?uploads", "", "")                    // an upload begun
	do(http.MethodPut, "?partNumber=1&uploadId=u", "", "part") // a part
	do(http.MethodPost, "?uploadId=u", "", "<parts/>")         // written
	do(http.MethodPost, "?uploadId=v", "stale", "<parts/>")    // refused
	do(http.MethodDelete, "?uploadId=v", "", "")               // aborted

	got := m.Counts()
	assert.Equal(t, int64(8), got.Requests)
	assert.Equal(t, int64(2), got.Committed)
	assert.Equal(t, int64(2), got.Refused)
	assert.Equal(t, int64(1), got.Aborted)
	assert.Equal(t, int64(len("whole")*2+len("part")+len("<parts/>")*2), got.BytesWritten)
}
