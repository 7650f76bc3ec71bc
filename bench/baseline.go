package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rewatch/rewatch/backoff"
)

// Baseline is a relist-on-error reflector in plain HTTP: LIST (paginated, 500 a page, from the
// watch cache), Replace, WATCH from the list's resourceVersion; any watch failure or end →
// backoff (client-go's reflector backoff: 800 ms, ×2, jitter 1.0, cap 30 s, reset after 2 min
// without a backoff) → full LIST again. It ignores Retry-After. This is what a reflector
// without watch retries does: the cost rewatch exists to avoid.
type Baseline struct {
	Client *http.Client
	Server string // base URL
	Path   string // e.g. /api/v1/namespaces/x/configmaps
	Store  InnerStoreWriter
}

// InnerStoreWriter is the subset of a store the baseline writes to.
type InnerStoreWriter interface {
	Add(obj any) error
	Update(obj any) error
	Delete(obj any) error
	Replace(items []any, resourceVersion string) error
}

// Run runs until ctx is done.
func (b *Baseline) Run(ctx context.Context) {
	src := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	delays := backoff.Reflector()
	lastBackoff := time.Now()
	for ctx.Err() == nil {
		rv, err := b.list(ctx)
		if err == nil {
			b.watch(ctx, rv)
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(lastBackoff) > backoff.ReflectorResetAfter {
			delays = backoff.Reflector()
		}
		d := delays.Step(src)
		lastBackoff = time.Now()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (b *Baseline) get(ctx context.Context, q url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Server+b.Path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := b.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", b.Path, resp.Status)
	}
	return resp, nil
}

func (b *Baseline) list(ctx context.Context) (string, error) {
	var items []any
	cont, rv := "", ""
	for {
		q := url.Values{"limit": {"500"}}
		if cont != "" {
			q.Set("continue", cont)
		} else {
			q.Set("resourceVersion", "0")
		}
		resp, err := b.get(ctx, q)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		var l unstructured.UnstructuredList
		if err := l.UnmarshalJSON(body); err != nil {
			return "", err
		}
		for i := range l.Items {
			items = append(items, &l.Items[i])
		}
		rv, cont = l.GetResourceVersion(), l.GetContinue()
		if cont == "" {
			break
		}
	}
	return rv, b.Store.Replace(items, rv)
}

// watch returns when the stream ends for any reason.
func (b *Baseline) watch(ctx context.Context, rv string) {
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"},
		"timeoutSeconds": {fmt.Sprint(300 + rand.IntN(300))}}
	resp, err := b.get(ctx, q)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var we metav1.WatchEvent
		if err := dec.Decode(&we); err != nil {
			return
		}
		if we.Type == "BOOKMARK" {
			continue
		}
		if we.Type == "ERROR" {
			return
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(we.Object.Raw); err != nil {
			return
		}
		switch we.Type {
		case "ADDED":
			err = b.Store.Add(u)
		case "MODIFIED":
			err = b.Store.Update(u)
		case "DELETED":
			err = b.Store.Delete(u)
		}
		if err != nil {
			return
		}
	}
}
