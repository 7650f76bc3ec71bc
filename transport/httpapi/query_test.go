package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

// tableAsking is a caller's decoder that asks for the server's printed tables, as a CLI does:
// its media types go into Accept as they are, and its query into every request.
type tableAsking struct {
	Decoder
	query url.Values
}

func (tableAsking) MediaTypes() []string {
	return []string{"application/json;as=Table;v=v1;g=meta.k8s.io", MediaJSON}
}

func (d tableAsking) Query() url.Values { return d.query }

// A QueryDecoder's parameters reach the LIST and the WATCH beside the machine's own, and its
// media types are asked for in Accept as it names them.
func TestQueryDecoderParametersReachEveryRequest(t *testing.T) {
	got := make(chan *http.Request, 2)
	client := &http.Client{Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		got <- r
		return nil, errors.New("not sent")
	})}
	tr, err := New(Config{Client: client, Server: "https://127.0.0.1:6443", Decoder: tableAsking{Unstructured(), url.Values{"includeObject": {"Object"}}},
		Resource: Resource{Version: "v1", Resource: "configmaps", LabelSelector: "app=web"}})
	require.NoError(t, err)
	tr.List(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 1, Limit: 500}, func(fsm.Event) bool { return true })
	tr.Watch(context.Background(), fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, ResourceVersion: "5"}, func(fsm.Event) bool { return true })
	for _, want := range []url.Values{
		{"includeObject": {"Object"}, "labelSelector": {"app=web"}, "limit": {"500"}},
		{"includeObject": {"Object"}, "labelSelector": {"app=web"}, "resourceVersion": {"5"}, "watch": {"true"}},
	} {
		r := <-got
		require.Equal(t, want, r.URL.Query())
		require.Equal(t, "application/json;as=Table;v=v1;g=meta.k8s.io, application/json", r.Header.Get("Accept"))
	}
}

// A QueryDecoder may not set what the transport sets from the machine's commands.
func TestQueryDecoderCannotOverrideTheMachinesParameters(t *testing.T) {
	_, err := New(Config{Client: &http.Client{}, Server: "https://127.0.0.1:6443",
		Decoder:  tableAsking{Unstructured(), url.Values{"resourceVersion": {"0"}, "limit": {"1"}, "includeObject": {"Object"}}},
		Resource: Resource{Version: "v1", Resource: "configmaps"}})
	require.ErrorContains(t, err, "the decoder's query sets [limit resourceVersion]")
}
