package sim

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

func typesUID(s string) types.UID { return types.UID(s) }

// uidFor is deterministic so that runs with the same writes are comparable; the incarnation
// sets another cluster's uids apart.
func uidFor(incarnation uint16, n uint64) string {
	return fmt.Sprintf("5e1a7ed0-%04x-4000-8000-%012x", incarnation, n)
}
