package persist

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// # Sealed format (version 1)
//
// A sealed snapshot is a snapshot of the format above, encrypted and authenticated in chunks so
// that it is written and read streaming (docs/semantics.md, "Persisted cache", "Sealed"):
//
//	magic      8 bytes   "\x89RWSEAL\n"
//	version    uint16    big-endian, 1
//	key id     8 bytes   Key.ID of the key that sealed it
//	identity   32 bytes  SHA-256 of the identity's JSON
//	salt       32 bytes  random, one per snapshot
//	chunk      uint32    big-endian, the plaintext bytes of every chunk but the last (≤ 1 MiB)
//	chunks               each the AES-256-GCM seal of the next chunk bytes of the snapshot
//	                     (the last one fewer), under the key HKDF-SHA256(key, salt,
//	                     "rewatch snapshot seal v1"), with the nonce: the chunk's number
//	                     (uint64 big-endian), three zero bytes, then 1 for the last chunk and
//	                     0 for the others, and the header (magic to chunk) as additional data
//
// and nothing after the last chunk. A key of its own for each snapshot (the salt) makes the
// chunks of another snapshot fail; the numbered nonce makes a chunk moved, dropped or repeated
// fail; the last-chunk flag makes a snapshot cut at a chunk's end fail; the header as
// additional data makes a header of another identity, key or chunk size fail.

// SealFormatVersion is the version of the sealed layer this package writes and reads.
const SealFormatVersion = 1

var sealMagic = [8]byte{0x89, 'R', 'W', 'S', 'E', 'A', 'L', '\n'}

const (
	sealHeaderBytes   = 8 + 2 + keyIDBytes + sha256.Size + sealSaltBytes + 4
	sealSaltBytes     = 32
	sealChunkBytes    = 64 << 10
	maxSealChunkBytes = 1 << 20
	sealInfo          = "rewatch snapshot seal v1"
)

// Sealed is st with every snapshot sealed: encrypted and authenticated with keys[0] (AES-256-GCM,
// in chunks, so that a snapshot is still written and read streaming), opened with whichever of
// keys sealed it. A snapshot that no key opens, that was changed in any way (a byte, a chunk
// moved, dropped or taken from another snapshot, a header of another identity, a cut), or that
// is not sealed at all, is refused (a *Refused with a one-line reason): whoever can write where
// the snapshots are kept cannot make the controller load theirs, and whoever can read them
// learns nothing of the objects but their size.
//
// Key rotation: put the new key first and keep the old ones; what the old keys sealed is read
// and, at the next save, sealed again with the new one.
func Sealed(st Store, keys ...Key) (Store, error) {
	if st == nil {
		return nil, errors.New("persist: Sealed: no store")
	}
	if len(keys) == 0 {
		return nil, errors.New("persist: Sealed: no key")
	}
	s := &sealedStore{st: st, keys: map[[keyIDBytes]byte]Key{}, writer: keys[0]}
	for i, k := range keys {
		if k == (Key{}) {
			return nil, fmt.Errorf("persist: Sealed: key %d is all zeros", i)
		}
		id := k.id()
		if _, dup := s.keys[id]; dup {
			return nil, fmt.Errorf("persist: Sealed: key %d (%s) is given twice", i, k.ID())
		}
		s.keys[id] = k
		s.ids = append(s.ids, k.ID())
	}
	return s, nil
}

type sealedStore struct {
	st     Store
	keys   map[[keyIDBytes]byte]Key
	ids    []string // in the order given, for refusals
	writer Key
}

// Unwrap is the store the sealed snapshots are kept in.
func (s *sealedStore) Unwrap() Store { return s.st }

func identityDigest(id Identity) [sha256.Size]byte {
	b, _ := json.Marshal(id) // a struct of strings always marshals
	return sha256.Sum256(b)
}

func (s *sealedStore) Create(ctx context.Context, id Identity) (Pending, error) {
	return s.CreateFor(ctx, id, SnapshotInfo{})
}

// CreateFor tells the store under it what the snapshot is when that store wants to know
// (OrderedStore); the sealed layer itself has no use for it.
func (s *sealedStore) CreateFor(ctx context.Context, id Identity, info SnapshotInfo) (Pending, error) {
	var header [sealHeaderBytes]byte
	b := header[:0]
	b = append(b, sealMagic[:]...)
	b = binary.BigEndian.AppendUint16(b, SealFormatVersion)
	kid := s.writer.id()
	b = append(b, kid[:]...)
	digest := identityDigest(id)
	b = append(b, digest[:]...)
	salt := b[len(b) : len(b)+sealSaltBytes]
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("persist: seal: %w", err)
	}
	b = b[:len(b)+sealSaltBytes]
	b = binary.BigEndian.AppendUint32(b, sealChunkBytes)
	aead, err := chunkAEAD(s.writer, salt)
	if err != nil {
		return nil, err
	}
	var p Pending
	if os, ok := s.st.(OrderedStore); ok {
		p, err = os.CreateFor(ctx, id, info)
	} else {
		p, err = s.st.Create(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	if _, err := p.Write(b); err != nil {
		return nil, errors.Join(err, p.Abort())
	}
	return &sealingPending{p: p, aead: aead, ad: b, buf: make([]byte, 0, sealChunkBytes)}, nil
}

// chunkAEAD is the snapshot's own AEAD: AES-256-GCM under a key derived from the sealing key
// and the snapshot's salt.
func chunkAEAD(k Key, salt []byte) (cipher.AEAD, error) {
	sub, err := hkdf.Key(sha256.New, k[:], salt, sealInfo, KeySize)
	if err != nil {
		return nil, fmt.Errorf("persist: seal: %w", err)
	}
	block, err := aes.NewCipher(sub)
	if err != nil {
		return nil, fmt.Errorf("persist: seal: %w", err)
	}
	return cipher.NewGCM(block)
}

func chunkNonce(n uint64, last bool) []byte {
	var nonce [12]byte
	binary.BigEndian.PutUint64(nonce[:8], n)
	if last {
		nonce[11] = 1
	}
	return nonce[:]
}

// sealingPending seals what is written, a chunk at a time, into the store's Pending. A full
// chunk is sealed only once more follows it, so that the last chunk, sealed at Commit, is never
// empty unless the snapshot is.
type sealingPending struct {
	p    Pending
	aead cipher.AEAD
	ad   []byte
	buf  []byte
	out  []byte
	n    uint64
	err  error
}

func (s *sealingPending) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		if s.err != nil {
			return written, s.err
		}
		if len(s.buf) == cap(s.buf) {
			s.seal(false)
			continue
		}
		c := copy(s.buf[len(s.buf):cap(s.buf)], b)
		s.buf = s.buf[:len(s.buf)+c]
		b = b[c:]
		written += c
	}
	return written, s.err
}

func (s *sealingPending) seal(last bool) {
	s.out = s.aead.Seal(s.out[:0], chunkNonce(s.n, last), s.buf, s.ad)
	s.n++
	s.buf = s.buf[:0]
	if _, err := s.p.Write(s.out); err != nil {
		s.err = err
	}
}

func (s *sealingPending) Commit() error {
	if s.err == nil {
		s.seal(true)
	}
	if s.err != nil {
		return errors.Join(s.err, s.p.Abort())
	}
	return s.p.Commit()
}

func (s *sealingPending) Abort() error { return s.p.Abort() }

func (s *sealedStore) Open(ctx context.Context, id Identity) (io.ReadCloser, error) {
	rc, err := s.st.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := s.open(rc, id)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return r, nil
}

func (s *sealedStore) open(rc io.ReadCloser, id Identity) (*unsealingReader, error) {
	br := bufio.NewReaderSize(rc, 256<<10)
	var h [sealHeaderBytes]byte
	n, err := io.ReadFull(br, h[:])
	if n >= len(magic) && [8]byte(h[:8]) == magic {
		return nil, refused(nil, "not sealed: this store loads sealed snapshots only, and one in clear may have been put there by anyone who can write there")
	}
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, refused(err, "truncated: the sealed snapshot ends in its header")
		}
		return nil, refused(err, "reading the sealed header: %v", err)
	}
	if [8]byte(h[:8]) != sealMagic {
		return nil, refused(nil, "not a sealed rewatch snapshot (bad magic %q)", h[:8])
	}
	if v := binary.BigEndian.Uint16(h[8:10]); v != SealFormatVersion {
		return nil, refused(nil, "sealed format version %d, this build reads %d", v, SealFormatVersion)
	}
	off := 10
	kid := [keyIDBytes]byte(h[off : off+keyIDBytes])
	off += keyIDBytes
	key, ok := s.keys[kid]
	if !ok {
		return nil, refused(nil, "sealed with key %x, which is not one of this store's keys (%s)", kid[:], strings.Join(s.ids, ", "))
	}
	if digest := identityDigest(id); !bytes.Equal(h[off:off+sha256.Size], digest[:]) {
		return nil, refused(nil, "sealed for another identity than %s", id)
	}
	off += sha256.Size
	salt := h[off : off+sealSaltBytes]
	off += sealSaltBytes
	chunk := binary.BigEndian.Uint32(h[off:])
	if chunk == 0 || chunk > maxSealChunkBytes {
		return nil, refused(nil, "sealed chunks of %d bytes, not between 1 and %d (corrupted)", chunk, maxSealChunkBytes)
	}
	aead, err := chunkAEAD(key, salt)
	if err != nil {
		return nil, refused(err, "%v", err)
	}
	return &unsealingReader{rc: rc, r: br, aead: aead, ad: append([]byte(nil), h[:]...), ct: make([]byte, int(chunk)+aead.Overhead())}, nil
}

// unsealingReader opens a sealed snapshot's chunks one after another; a chunk's bytes are read
// only once it has been authenticated, and the end only once the last chunk has. Every failure
// is a *Refused.
type unsealingReader struct {
	rc    io.Closer
	r     *bufio.Reader
	aead  cipher.AEAD
	ad    []byte
	ct    []byte
	plain []byte
	next  []byte // what of plain is not read yet
	n     uint64
	done  bool
	err   error
}

func (u *unsealingReader) Read(p []byte) (int, error) {
	for len(u.next) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		if u.done {
			return 0, io.EOF
		}
		u.err = u.chunk()
	}
	c := copy(p, u.next)
	u.next = u.next[c:]
	return c, nil
}

// chunk reads, authenticates and opens the next chunk.
func (u *unsealingReader) chunk() error {
	n, err := io.ReadFull(u.r, u.ct)
	var last bool
	switch {
	case errors.Is(err, io.EOF):
		if u.n == 0 {
			return refused(err, "truncated: the sealed snapshot has no chunk")
		}
		return refused(err, "truncated: the sealed snapshot ends after chunk %d, which is not its last", u.n-1)
	case errors.Is(err, io.ErrUnexpectedEOF):
		last = true // a short chunk can only be the last
	case err != nil:
		return refused(err, "reading chunk %d: %v", u.n, err)
	default:
		_, perr := u.r.Peek(1)
		switch {
		case errors.Is(perr, io.EOF):
			last = true
		case perr != nil:
			return refused(perr, "reading past chunk %d: %v", u.n, perr)
		}
	}
	ct := u.ct[:n]
	plain, err := u.aead.Open(u.plain[:0], chunkNonce(u.n, last), ct, u.ad)
	if err != nil {
		// Say what it looks like when the other reading of the end opens the chunk.
		if _, oerr := u.aead.Open(nil, chunkNonce(u.n, !last), ct, u.ad); oerr == nil {
			if last {
				return refused(nil, "truncated: the sealed snapshot ends after chunk %d, which is not its last", u.n)
			}
			return refused(nil, "bytes after the last chunk (chunk %d) of the sealed snapshot: tampered with", u.n)
		}
		return refused(nil, "chunk %d fails authentication: tampered with, or not this snapshot's", u.n)
	}
	u.plain, u.next = plain, plain
	u.n++
	u.done = last
	return nil
}

func (u *unsealingReader) Close() error { return u.rc.Close() }
