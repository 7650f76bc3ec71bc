//go:build !unix

package persist

import "io/fs"

// fileOwner: no owner to compare where permission bits and uids mean nothing.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// noFollow: no such flag here; the checks on what was opened remain.
const noFollow = 0
