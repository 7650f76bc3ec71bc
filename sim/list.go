package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Messages of k8s.io/apiserver/pkg/storage/etcd3/store.go, which the
// apiserver returns when etcd answers "required revision has been compacted".
const (
	msgExpired              = "The resourceVersion for the provided list is too old."
	msgInconsistentContinue = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// tooLarge is storage.NewTooLargeResourceVersionError: 504 Timeout, cause
// ResourceVersionTooLarge, retry after 1s (cacher's
// resourceVersionTooHighRetrySeconds). client-go's
// apierrors.IsTooLargeResourceVersion recognizes it by the cause.
func tooLarge(want, current uint64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

func (s *Server) currentRV() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rv
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, res *resource, enc encoding, p predicate, o internalversion.ListOptions) {
	prefix := ""
	if p.namespace != "" {
		prefix = p.namespace + "/"
	}
	limit := o.Limit
	startKey := prefix
	exact, fromContinue := false, false
	var listRV uint64
	if o.Continue != "" {
		// storage.ValidateListOptions
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			enc.writeStatus(w, apierrors.NewBadRequest("specifying resource version is not allowed when using continue"))
			return
		}
		key, rv, err := decodeContinue(o.Continue, prefix)
		if err != nil {
			enc.writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err)))
			return
		}
		startKey, fromContinue = key, true
		if rv > 0 {
			exact, listRV = true, uint64(rv)
		}
	} else if o.ResourceVersion != "" {
		n, _ := strconv.ParseUint(o.ResourceVersion, 10, 64)
		switch {
		case n == 0:
			// cacher computeListLimit: "the limit is ignored for requests
			// that set RV == 0" — the whole list comes from the watch cache.
			limit = 0
		case o.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
			exact, listRV = true, n
		}
		// Exact and NotOlderThan both wait for the cache to reach n
		// (waitUntilFreshAndBlock), then fail with 504.
		if n > 0 && !s.waitFresh(r.Context(), n) {
			enc.writeStatus(w, tooLarge(n, s.currentRV()))
			return
		}
	}
	if s.opts.MaxPageSize > 0 && limit > int64(s.opts.MaxPageSize) {
		limit = int64(s.opts.MaxPageSize)
	}

	s.mu.Lock()
	var state map[string]*object
	if exact {
		if listRV < res.logBase {
			s.mu.Unlock()
			if fromContinue {
				// etcd3 handleCompactedErrorForPaging: 410 with a token that
				// resumes at the same key at the latest RV.
				err := apierrors.NewResourceExpired(msgInconsistentContinue)
				err.ErrStatus.ListMeta.Continue = encodeContinue(startKey, prefix, -1)
				enc.writeStatus(w, err)
				return
			}
			enc.writeStatus(w, apierrors.NewResourceExpired(msgExpired))
			return
		}
		state = res.stateAt(listRV)
	} else {
		state = res.objects
		listRV = s.rv
	}
	objs := sortedObjects(state)
	s.mu.Unlock()

	list := wireList{
		TypeMeta: metav1.TypeMeta{Kind: res.kind + "List", APIVersion: res.apiVersion},
		ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(listRV, 10)},
		Items:    []wireObject{},
	}
	var lastKey string
	inScope := 0
	for _, obj := range objs {
		if obj.key() < startKey || !strings.HasPrefix(obj.key(), prefix) {
			continue
		}
		if limit > 0 && int64(len(list.Items)) >= limit {
			inScope++
			continue
		}
		if p.matches(obj) {
			list.Items = append(list.Items, res.wire(obj, res.custom))
			lastKey = obj.key()
		}
	}
	if inScope > 0 {
		list.Continue = encodeContinue(lastKey+"\x00", prefix, int64(listRV))
		if p.empty() {
			n := int64(inScope)
			list.RemainingItemCount = &n
		}
	}
	enc.writeBody(w, http.StatusOK, list)
}
