package persist

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Dir keeps snapshots as files in the directory path, one per identity, named by FileName.
//
// Create makes the directory (mode 0700) if it is missing and refuses one that others may
// write (mode bits 0022): anyone who can write there can put a snapshot in the controller's
// cache. A snapshot is written to a temporary file beside its final name (mode 0600), synced,
// renamed over the old one and the directory synced, so a crash at any point leaves the old
// snapshot or the new one, never a torn one. Open refuses (a *Refused) a file that another
// user owns or that others may read or write, and a directory that others may write: such a
// snapshot may not be the one this process wrote. A Kubernetes emptyDir volume is mode 0777:
// give Dir a directory inside it, which Dir creates 0700.
//
// A crash leaves its temporary file behind. Create removes those of its identity: it takes a
// lock (an flock on FileName + ".lock", which the kernel releases when a process dies) for as
// long as the snapshot is being written, so any temporary file of the identity it finds then is
// a dead writer's. A second Create of the same identity while one is pending fails at once.
func Dir(path string) Store { return dirStore{path: path} }

type dirStore struct{ path string }

// FileName is the snapshot's file name for id: a readable prefix (resource, group,
// namespace), then a hash of the whole identity, so two identities never share a file.
func FileName(id Identity) string {
	b, _ := json.Marshal(id) // a struct of strings always marshals
	sum := sha256.Sum256(b)
	prefix := id.Resource
	if id.Group != "" {
		prefix += "." + id.Group
	}
	if id.Namespace != "" {
		prefix += "." + id.Namespace
	}
	return sanitize(prefix) + "-" + hex.EncodeToString(sum[:16]) + ".snap"
}

// sanitize keeps a name's letters, digits, dots and dashes, at most 64 of them.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "snapshot"
	}
	return b.String()
}

const tmpInfix = ".tmp-"

// checkOwnerOnly says whether fi may be trusted: owned by this process's user, with none of
// the mode bits in bad set. Permission bits mean nothing on Windows, where this is skipped.
func checkOwnerOnly(fi fs.FileInfo, bad fs.FileMode, what string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if m := fi.Mode().Perm(); m&bad != 0 {
		return fmt.Errorf("%s has mode %#o: others may %s it", what, m, accessWord(m&bad))
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this process's %d", what, uid, os.Geteuid())
	}
	return nil
}

func accessWord(m fs.FileMode) string {
	switch {
	case m&0o022 != 0 && m&0o044 != 0:
		return "read and write"
	case m&0o022 != 0:
		return "write"
	case m&0o044 != 0:
		return "read"
	}
	return "use"
}

func (d dirStore) Open(ctx context.Context, id Identity) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := filepath.Join(d.path, FileName(id))
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, refused(nil, "%s is a symbolic link", name)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		if !fi.Mode().IsRegular() {
			err = refused(nil, "%s is not a regular file", name)
		} else if e := checkOwnerOnly(fi, 0o077, name); e != nil {
			err = refused(e, "%v", e)
		}
	}
	if err == nil {
		var di fs.FileInfo
		if di, err = os.Stat(d.path); err == nil {
			if e := checkOwnerOnly(di, 0o022, "directory "+d.path); e != nil {
				err = refused(e, "%v", e)
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (d dirStore) Create(ctx context.Context, id Identity) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return nil, fmt.Errorf("persist: %w", err)
	}
	di, err := os.Stat(d.path)
	if err != nil {
		return nil, fmt.Errorf("persist: %w", err)
	}
	if err := checkOwnerOnly(di, 0o022, "directory "+d.path); err != nil {
		return nil, fmt.Errorf("persist: will not write snapshots there: %w", err)
	}
	base := FileName(id)
	final := filepath.Join(d.path, base)
	unlock, err := lockFile(final + ".lock")
	if err != nil {
		return nil, fmt.Errorf("persist: %w", err)
	}
	removeStaleTemps(d.path, base)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := final + tmpInfix + hex.EncodeToString(rnd[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("persist: %w", err)
	}
	return &pendingFile{f: f, tmp: tmp, final: final, dir: d.path, unlock: unlock}, nil
}

// removeStaleTemps removes the temporary files of base that a dead writer left; the caller
// holds base's lock, so no live writer has one.
func removeStaleTemps(dir, base string) {
	matches, err := filepath.Glob(filepath.Join(dir, escapeGlob(base)+tmpInfix+"*"))
	if err != nil {
		return
	}
	for _, m := range matches {
		_ = os.Remove(m)
	}
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

type pendingFile struct {
	f               *os.File
	tmp, final, dir string
	unlock          func()
	done            bool
}

func (p *pendingFile) Write(b []byte) (int, error) {
	if p.done {
		return 0, errors.New("persist: write after Commit or Abort")
	}
	return p.f.Write(b)
}

func (p *pendingFile) Commit() error {
	if p.done {
		return errors.New("persist: Commit after Commit or Abort")
	}
	p.done = true
	defer p.unlock()
	err := p.f.Sync()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.tmp, p.final)
	}
	if err != nil {
		_ = os.Remove(p.tmp)
		return fmt.Errorf("persist: %w", err)
	}
	// The rename is durable once the directory is: without this a power cut could bring back
	// the old name, or neither.
	if err := syncDir(p.dir); err != nil {
		return fmt.Errorf("persist: sync %s: %w", p.dir, err)
	}
	return nil
}

func (p *pendingFile) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	defer p.unlock()
	p.f.Close()
	if err := os.Remove(p.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("persist: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be opened for syncing there; NTFS journals the rename
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
