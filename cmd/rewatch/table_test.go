package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/transport/httpapi"
)

const tableList = `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42","continue":"c1"},
"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},
 {"name":"Data","type":"integer","format":"","description":"","priority":0},
 {"name":"Age","type":"string","format":"","description":"","priority":0}],
"rows":[{"cells":["a",3,"5m"],"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"40","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"x":"1"}}},
 {"cells":["b",1000000,"1h"],"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"41"}}}]}`

// A LIST answered with a Table gives one row per item, each with its object and the cells as
// kubectl reads them (integers as int64, so 1000000 prints as 1000000, not 1e+06), and the
// Table's resourceVersion and continue token.
func TestTableDecoderReadsATableList(t *testing.T) {
	d := newTableDecoder()
	items, rv, cont, err := d.DecodeList(httpapi.MediaJSON, []byte(tableList))
	require.NoError(t, err)
	require.Equal(t, "42", rv)
	require.Equal(t, "c1", cont)
	require.Len(t, items, 2)
	a, b := items[0].(*serverRow), items[1].(*serverRow)
	require.Equal(t, "ns", a.GetNamespace())
	require.Equal(t, "40", a.GetResourceVersion())
	require.Equal(t, []any{"a", int64(3), "5m"}, a.cells)
	require.Equal(t, []any{"b", int64(1000000), "1h"}, b.cells)
	require.Len(t, a.columns.defs, 3)
	require.Same(t, a.columns, b.columns)
}

// A watch event's Table names the columns on the first event only: the later ones take them.
func TestTableDecoderReadsWatchEvents(t *testing.T) {
	d := newTableDecoder()
	first, err := d.DecodeObject(httpapi.MediaJSON, []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1",
		"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0}],
		"rows":[{"cells":["a"],"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7"}}}]}`))
	require.NoError(t, err)
	later, err := d.DecodeObject(httpapi.MediaJSON, []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1",
		"rows":[{"cells":["b"],"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","resourceVersion":"8"}}}]}`))
	require.NoError(t, err)
	require.Same(t, first.(*serverRow).columns, later.(*serverRow).columns)
	require.Equal(t, "Name", later.(*serverRow).columns.defs[0].Name)
}

// A server that prints no table answers with the plain list and objects: rows without cells,
// the items given the list's kind, as kubectl's fallback prints them.
func TestTableDecoderReadsPlainAnswers(t *testing.T) {
	d := newTableDecoder()
	items, rv, _, err := d.DecodeList(httpapi.MediaJSON, []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},
		"items":[{"metadata":{"name":"a","resourceVersion":"3"}}]}`))
	require.NoError(t, err)
	require.Equal(t, "9", rv)
	row := items[0].(*serverRow)
	require.Nil(t, row.cells)
	require.Equal(t, "ConfigMap", row.GetKind())
	require.Equal(t, "v1", row.GetAPIVersion())
	obj, err := d.DecodeObject(httpapi.MediaJSON, []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"4"}}`))
	require.NoError(t, err)
	require.Equal(t, "4", obj.(*serverRow).GetResourceVersion())
}

// A row whose object the server left out (includeObject ignored) is an error, not a row that
// would leave the store without its object.
func TestTableDecoderRefusesARowWithoutItsObject(t *testing.T) {
	_, _, _, err := newTableDecoder().DecodeList(httpapi.MediaJSON, []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},
		"rows":[{"cells":["a"]}]}`))
	require.ErrorContains(t, err, "without its object")
}

// A --cache-dir snapshot keeps a row with its cells and columns; it comes back marked restored,
// so that its Age is computed anew when printed.
func TestTableDecoderSnapshotRoundTrip(t *testing.T) {
	d := newTableDecoder()
	items, _, _, err := d.DecodeList(httpapi.MediaJSON, []byte(tableList))
	require.NoError(t, err)
	b, err := d.EncodeObject(items[0])
	require.NoError(t, err)
	back, err := newTableDecoder().DecodeObject(d.SnapshotMediaType(), b)
	require.NoError(t, err)
	row := back.(*serverRow)
	require.True(t, row.restored)
	require.Equal(t, items[0].(*serverRow).cells, row.cells)
	require.Equal(t, items[0].(*serverRow).columns.defs, row.columns.defs)
	require.Equal(t, items[0].(*serverRow).Object, row.Object)
}
