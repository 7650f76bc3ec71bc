package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rewatch/rewatch/sim"
)

// gatedServer parks WATCH requests on their way into the simulated server while its gate is
// held (the demo's gate, on the server's side), so that a test can change and compact the server
// before the reflector's re-watch reaches it: the 410 and the relist after it are then the
// server's own answer, not a race.
type gatedServer struct {
	gate *gate
	next http.Handler
}

func (s gatedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.gate.park(r) != nil {
		return
	}
	s.next.ServeHTTP(w, r)
}

// simCLI is `rewatch watch` run against the simulated server behind a watch gate.
type simCLI struct {
	srv  *sim.Server
	gate *gate
	*backgroundRun
}

func startSimCLI(t *testing.T, objects int, args ...string) *simCLI {
	t.Helper()
	c := &simCLI{srv: sim.New(sim.Options{})}
	for i := range objects {
		_, err := c.srv.Create(sim.ConfigMaps, "default", fmt.Sprintf("cm-%d", i), map[string]string{"k": "v"})
		require.NoError(t, err)
	}
	c.gate = &gate{}
	api := httptest.NewServer(gatedServer{gate: c.gate, next: tableServer{next: c.srv.Handler(), now: time.Now}})
	t.Cleanup(func() {
		c.srv.Close()
		api.Close()
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, api.URL, "default")
	c.backgroundRun = startRun(t, append([]string{"watch", "--resource", "configmaps", "--kubeconfig", kubeconfig, "--trace=json"}, args...)...)
	return c
}

// watches counts the watches the reflector opened, from its trace.
func (c *simCLI) watches() int { return strings.Count(c.err.String(), `"cause":"watch-opened"`) }

func (c *simCLI) stop(t *testing.T) {
	t.Helper()
	require.Equal(t, exitOK, c.backgroundRun.stop(t), "stderr %s", c.err.String())
}

// waitRows waits until stdout has n lines.
func (c *simCLI) waitRows(t *testing.T, n int) {
	t.Helper()
	waitFor(t, func() bool { return strings.Count(c.out.String(), "\n") >= n })
}

// relist makes the reflector relist after change ran: its watch ends, the re-watch is parked
// while change runs and the server compacts, then gets the server's 410.
func (c *simCLI) relist(t *testing.T, change func()) {
	t.Helper()
	lists := strings.Count(c.err.String(), `"cause":"list-complete"`)
	c.gate.hold()
	c.srv.DropWatches()
	waitFor(t, func() bool { return c.gate.waiting() > 0 })
	change()
	c.srv.Compact()
	c.gate.release()
	waitFor(t, func() bool { return strings.Count(c.err.String(), `"cause":"list-complete"`) > lists })
}

var ageRE = regexp.MustCompile(`\s+\S+$`)

// rowsOf is stdout's rows with runs of spaces collapsed and the AGE column cut off.
func rowsOf(out string) []string {
	var rows []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Join(strings.Fields(ageRE.ReplaceAllString(l, "")), " "))
	}
	return rows
}

// `rewatch watch` prints the objects as kubectl get -w --output-watch-events does: the
// initial list as ADDED rows under a header, then a row per watch event; a relist prints only
// what changed (docs/semantics.md, "Relists": an unchanged object is no update).
func TestWatchPrintsObjectRows(t *testing.T) {
	c := startSimCLI(t, 3, "--output-watch-events")
	c.waitRows(t, 4)
	waitFor(t, func() bool { return c.watches() >= 1 })
	_, err := c.srv.Update(sim.ConfigMaps, "default", "cm-0", map[string]string{"k": "v", "k2": "v2"})
	require.NoError(t, err)
	_, err = c.srv.Create(sim.ConfigMaps, "default", "cm-3", nil)
	require.NoError(t, err)
	_, err = c.srv.Delete(sim.ConfigMaps, "default", "cm-1")
	require.NoError(t, err)
	c.waitRows(t, 7)
	c.relist(t, func() {
		_, err := c.srv.Update(sim.ConfigMaps, "default", "cm-2", nil)
		require.NoError(t, err)
		_, err = c.srv.Delete(sim.ConfigMaps, "default", "cm-3")
		require.NoError(t, err)
		_, err = c.srv.Create(sim.ConfigMaps, "default", "cm-4", nil)
		require.NoError(t, err)
	})
	_, err = c.srv.Update(sim.ConfigMaps, "default", "cm-4", map[string]string{"a": "b"})
	require.NoError(t, err)
	c.waitRows(t, 11)
	c.stop(t)
	require.Equal(t, []string{
		"EVENT NAME DATA",
		"ADDED cm-0 1", "ADDED cm-1 1", "ADDED cm-2 1",
		"MODIFIED cm-0 2", "ADDED cm-3 0", "DELETED cm-1 1",
		// The relist: cm-0 is unchanged and printed nothing.
		"MODIFIED cm-2 0", "ADDED cm-4 0", "DELETED cm-3 0",
		"MODIFIED cm-4 1",
	}, rowsOf(c.out.String()))
	// kubectl's layout: the EVENT column as wide as MODIFIED from the start, the others as
	// their widest cell so far, three spaces apart.
	require.Regexp(t, `^EVENT      NAME   DATA   AGE\nADDED      cm-0   1      \d+s\n`, c.out.String())
}

// -A adds the NAMESPACE column; without --output-watch-events there is no EVENT column.
func TestWatchRowsAllNamespaces(t *testing.T) {
	c := startSimCLI(t, 2, "-A", "-w")
	c.waitRows(t, 3)
	c.stop(t)
	require.Equal(t, []string{"NAMESPACE NAME DATA", "default cm-0 1", "default cm-1 1"}, rowsOf(c.out.String()))
	// The list is aligned as one batch, under its header.
	require.Regexp(t, `^NAMESPACE   NAME   DATA   AGE\ndefault     cm-0   1      \d+s\ndefault     cm-1   1      \d+s\n$`, c.out.String())
}

// -o name prints kind/name, one per event (kubectl's name output has no event type even with
// --output-watch-events); -o json and -o yaml print one document per event, with apiVersion
// and kind, and with --output-watch-events the watch event kubectl prints, on one line.
func TestWatchOutputFormats(t *testing.T) {
	t.Run("name", func(t *testing.T) {
		c := startSimCLI(t, 2, "-o", "name", "--output-watch-events")
		c.waitRows(t, 2)
		c.stop(t)
		require.Equal(t, "configmap/cm-0\nconfigmap/cm-1\n", c.out.String())
	})
	t.Run("json", func(t *testing.T) {
		c := startSimCLI(t, 1, "-o", "json", "--output-watch-events")
		waitFor(t, func() bool { return c.watches() >= 1 })
		_, err := c.srv.Delete(sim.ConfigMaps, "default", "cm-0")
		require.NoError(t, err)
		waitFor(t, func() bool { return strings.Count(c.out.String(), `"type":"DELETED"`) == 1 })
		require.Equal(t, 2, strings.Count(c.out.String(), "\n"), "a line per event")
		c.stop(t)
		dec := json.NewDecoder(strings.NewReader(c.out.String()))
		var types []string
		for dec.More() {
			var e struct {
				Type   string           `json:"type"`
				Object corev1.ConfigMap `json:"object"`
			}
			require.NoError(t, dec.Decode(&e))
			require.Equal(t, metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, e.Object.TypeMeta)
			require.Equal(t, "cm-0", e.Object.Name)
			types = append(types, e.Type)
		}
		require.Equal(t, []string{"ADDED", "DELETED"}, types)
	})
	t.Run("yaml", func(t *testing.T) {
		c := startSimCLI(t, 2, "-o", "yaml")
		waitFor(t, func() bool { return strings.Count(c.out.String(), "kind: ConfigMap") == 2 })
		c.stop(t)
		docs := strings.Split(c.out.String(), "---\n")
		require.Len(t, docs, 2)
		for i, d := range docs {
			var cm corev1.ConfigMap
			require.NoError(t, yaml.Unmarshal([]byte(d), &cm))
			require.Equal(t, fmt.Sprintf("cm-%d", i), cm.Name)
			require.Equal(t, map[string]string{"k": "v"}, cm.Data)
			require.NotContains(t, d, "managedFields")
		}
	})
}

// The story on stderr: 5,000 listed objects add one trace line per page, not one per object,
// on the initial list (which kube-apiserver, and the simulator, serve from the watch cache in
// one page) and on a relist in pages of 500; the relist of unchanged objects prints no rows.
func TestTraceIsOneLinePerPage(t *testing.T) {
	c := startSimCLI(t, 5000, "--page-size", "500", "--page-relists", "-o", "name")
	c.waitRows(t, 5000)
	waitFor(t, func() bool { return c.watches() >= 1 })
	c.relist(t, func() {
		// A write elsewhere, so that the compaction leaves the watch's resourceVersion behind.
		_, err := c.srv.Create(sim.ConfigMaps, "elsewhere", "x", nil)
		require.NoError(t, err)
	})
	c.stop(t)
	require.Equal(t, 5000, strings.Count(c.out.String(), "\n"), "the relist printed no rows")
	var pageLines, lines int
	var summary summaryJSON
	for _, l := range strings.Split(strings.TrimSpace(c.err.String()), "\n") {
		var tr transitionJSON
		require.NoError(t, json.Unmarshal([]byte(l), &tr), l)
		lines++
		switch {
		case tr.Type == "summary":
			require.NoError(t, json.Unmarshal([]byte(l), &summary))
		case tr.Cause == "list-item":
			t.Fatalf("a line per item: %s", l)
		case tr.Cause == "list-page-more" || tr.Cause == "list-complete":
			pageLines++
		}
	}
	require.Equal(t, 2, summary.Lists)
	require.Equal(t, 1+10, summary.ListPages, "one page at start, ten on the relist")
	require.Equal(t, summary.ListPages, pageLines, "one line per page")
	// Besides the pages, a dozen lines whatever the number of objects: the start, the watches
	// opened, the stream's end, the re-watches' 410s, the stop and the summary.
	require.LessOrEqual(t, lines-pageLines, 12, "%s", c.err.String())
}

// The store's atomic Replace, which a Store must have, tells the same rows as the incremental
// replacement the driver uses.
func TestRowStoreReplaceDiffs(t *testing.T) {
	var rows []string
	s := newRowStore(sinkFunc(func(event string, obj any) {
		rows = append(rows, event+" "+obj.(*corev1.ConfigMap).Name+"@"+obj.(*corev1.ConfigMap).ResourceVersion)
	}))
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	require.NoError(t, s.Replace([]any{cm("a", "1"), cm("b", "2"), cm("c", "3")}, "3"))
	require.NoError(t, s.Replace([]any{cm("a", "1"), cm("b", "4"), cm("d", "5")}, "5"))
	require.Equal(t, []string{"ADDED a@1", "ADDED b@2", "ADDED c@3", "MODIFIED b@4", "ADDED d@5", "DELETED c@3"}, rows)

	rows = nil
	r, err := s.BeginReplace()
	require.NoError(t, err)
	require.NoError(t, r.Put(cm("a", "6")))
	require.NoError(t, r.(interface{ Keep(string) error }).Keep("ns/b"))
	require.NoError(t, r.Put(cm("e", "7")))
	require.NoError(t, r.Finish("7"))
	require.Equal(t, []string{"MODIFIED a@6", "ADDED e@7", "DELETED d@5"}, rows)
	require.ElementsMatch(t, []string{"ns/a", "ns/b", "ns/e"}, s.ListKeys())
}

type sinkFunc func(event string, obj any)

func (f sinkFunc) row(event string, obj any) { f(event, obj) }
func (f sinkFunc) flush(bool, bool)          {}

// With --watch-list the initial state arrives as watch events, each a Table of one row (the
// first naming the columns), and its end as a bookmark whose row's object keeps the
// initial-events-end annotation: the initial list prints as one table, as without it.
func TestWatchListPrintsTheServersTable(t *testing.T) {
	c := startSimCLI(t, 2, "--watch-list")
	c.waitRows(t, 3)
	waitFor(t, func() bool { return strings.Contains(c.err.String(), `"cause":"initial-events-end"`) })
	_, err := c.srv.Create(sim.ConfigMaps, "default", "cm-2", nil)
	require.NoError(t, err)
	c.waitRows(t, 4)
	c.stop(t)
	require.Equal(t, []string{"NAME DATA", "cm-0 1", "cm-1 1", "cm-2 0"}, rowsOf(c.out.String()))
	require.NotContains(t, c.err.String(), `"cause":"list-complete"`, "the initial state came by watch-list, not LIST")
}

// --watch-only leaves the initial list out and prints what changes after it, header first.
func TestWatchOnlyPrintsTheChangesAlone(t *testing.T) {
	c := startSimCLI(t, 2, "--watch-only")
	waitFor(t, func() bool { return c.watches() >= 1 })
	_, err := c.srv.Update(sim.ConfigMaps, "default", "cm-1", map[string]string{"a": "1", "b": "2"})
	require.NoError(t, err)
	c.waitRows(t, 2)
	c.stop(t)
	require.Equal(t, []string{"NAME DATA", "cm-1 2"}, rowsOf(c.out.String()))
}
