package persist

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"time"
)

// FormatVersion is the version of the file format this package writes and reads.
const FormatVersion = 1

// Limits on what Load reads: a length past one is refused before anything is allocated for
// it, so a hostile or corrupted file costs no more than its bytes.
const (
	MaxHeaderBytes = 1 << 20
	// MaxItemBytes bounds one encoded object: four times the transport's default frame bound
	// (16 MiB), itself far past etcd's default request limit (1.5 MiB).
	MaxItemBytes = 64 << 20
)

var magic = [8]byte{0x89, 'R', 'W', 'S', 'N', 'A', 'P', '\n'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the snapshot's JSON header.
type header struct {
	Identity        Identity  `json:"identity"`
	ResourceVersion string    `json:"resourceVersion"`
	Written         time.Time `json:"written"`
	MediaType       string    `json:"mediaType"`
	Count           int64     `json:"count"`
}

// ctxCheckEvery is how many items Save and Load go between looks at their context.
const ctxCheckEvery = 256

// Save writes objects (the store's, consistent at rv) atomically: the snapshot of id becomes
// the new one only once it is complete and durable; on any error the old one stays.
func Save(ctx context.Context, st Store, id Identity, codec Codec, rv string, objects []any, now time.Time) (SaveStats, error) {
	return SaveSnapshot(ctx, st, id, codec, SnapshotInfo{ResourceVersion: rv, Written: now}, objects)
}

// SaveSnapshot is Save with what an OrderedStore is told of the snapshot (its Count is
// len(objects)).
func SaveSnapshot(ctx context.Context, st Store, id Identity, codec Codec, info SnapshotInfo, objects []any) (SaveStats, error) {
	rv, now := info.ResourceVersion, info.Written
	info.Written, info.Count = now.UTC(), len(objects)
	h, err := json.Marshal(header{Identity: id, ResourceVersion: rv, Written: now.UTC(), MediaType: codec.MediaType(), Count: int64(len(objects))})
	if err != nil {
		return SaveStats{}, fmt.Errorf("persist: header: %w", err)
	}
	if len(h) > MaxHeaderBytes {
		return SaveStats{}, fmt.Errorf("persist: the header is %d bytes, more than %d", len(h), MaxHeaderBytes)
	}
	var p Pending
	if os, ok := st.(OrderedStore); ok {
		p, err = os.CreateFor(ctx, id, info)
	} else {
		p, err = st.Create(ctx, id)
	}
	if errors.Is(err, ErrSuperseded) {
		return SaveStats{Superseded: true}, nil
	}
	if err != nil {
		return SaveStats{}, err
	}
	w := &checksummedWriter{w: bufio.NewWriterSize(p, 256<<10), crc: crc32.New(castagnoli)}
	stats, err := writeSnapshot(ctx, w, h, codec, objects)
	if err == nil {
		err = w.w.Flush()
	}
	if err != nil {
		return SaveStats{}, errors.Join(err, p.Abort())
	}
	if err := p.Commit(); err != nil {
		if errors.Is(err, ErrSuperseded) {
			return SaveStats{Superseded: true}, nil
		}
		return SaveStats{}, err
	}
	return stats, nil
}

func writeSnapshot(ctx context.Context, w *checksummedWriter, h []byte, codec Codec, objects []any) (SaveStats, error) {
	var b [6]byte
	w.write(magic[:])
	binary.BigEndian.PutUint16(b[:2], FormatVersion)
	w.write(b[:2])
	binary.BigEndian.PutUint32(b[:4], uint32(len(h)))
	w.write(b[:4])
	w.write(h)
	w.sum()
	ae, _ := codec.(AppendEncoder)
	var buf []byte
	for i, obj := range objects {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return SaveStats{}, err
			}
		}
		var raw []byte
		var err error
		if ae != nil {
			raw, err = ae.AppendEncode(buf[:0], obj)
			buf = raw
		} else {
			raw, err = codec.Encode(obj)
		}
		if err != nil {
			return SaveStats{}, fmt.Errorf("persist: encode item %d: %w", i, err)
		}
		if len(raw) > MaxItemBytes {
			return SaveStats{}, fmt.Errorf("persist: item %d is %d bytes encoded, more than %d", i, len(raw), MaxItemBytes)
		}
		binary.BigEndian.PutUint32(b[:4], uint32(len(raw)))
		w.write(b[:4])
		w.write(raw)
		if w.err != nil {
			return SaveStats{}, w.err
		}
	}
	w.sum()
	if w.err != nil {
		return SaveStats{}, w.err
	}
	return SaveStats{Count: len(objects), Bytes: w.n}, nil
}

// checksummedWriter writes through a CRC and remembers the first error.
type checksummedWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	err error
}

func (c *checksummedWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	c.crc.Write(b)
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

// sum writes the CRC of everything written so far (which the CRC then covers too).
func (c *checksummedWriter) sum() {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], c.crc.Sum32())
	c.write(b[:])
}

// Load reads, verifies (checksums, count, identity, media type, format version) and decodes
// the snapshot of id. Any refusal is a *Refused error (errors.As) whose Reason names what was
// wrong; ErrNotFound when there is none. Items are decoded as they are read, and all of them
// are dropped if the file turns out corrupted: Load never returns part of a snapshot.
func Load(ctx context.Context, st Store, id Identity, codec Codec) (*Snapshot, error) {
	rc, err := st.Open(ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, ErrNotFound
		}
		var r *Refused
		switch {
		case errors.As(err, &r):
			return nil, r
		case ctx.Err() != nil:
			return nil, err
		}
		return nil, refused(err, "cannot open it: %v", err)
	}
	defer rc.Close()
	r := &checksummedReader{r: bufio.NewReaderSize(rc, 256<<10), crc: crc32.New(castagnoli)}
	return readSnapshot(ctx, r, id, codec)
}

func readSnapshot(ctx context.Context, r *checksummedReader, id Identity, codec Codec) (*Snapshot, error) {
	var b [8]byte
	if err := r.full(b[:8], "the magic"); err != nil {
		return nil, err
	}
	if b == sealMagic {
		return nil, refused(nil, "sealed: it is read with the keys that sealed it (persist.Sealed), and this store has none")
	}
	if b != magic {
		return nil, refused(nil, "not a rewatch snapshot (bad magic %q)", b[:])
	}
	if err := r.full(b[:2], "the format version"); err != nil {
		return nil, err
	}
	if v := binary.BigEndian.Uint16(b[:2]); v != FormatVersion {
		return nil, refused(nil, "format version %d, this build reads %d", v, FormatVersion)
	}
	if err := r.full(b[:4], "the header length"); err != nil {
		return nil, err
	}
	hlen := binary.BigEndian.Uint32(b[:4])
	if hlen > MaxHeaderBytes {
		return nil, refused(nil, "header length %d is more than %d (corrupted)", hlen, MaxHeaderBytes)
	}
	hb, err := r.bytes(int64(hlen), nil, "the header")
	if err != nil {
		return nil, err
	}
	if err := r.verify("header"); err != nil {
		return nil, err
	}
	var h header
	dec := json.NewDecoder(bytes.NewReader(hb))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, refused(err, "header does not decode: %v", err)
	}
	if err := sameIdentity(id, h.Identity); err != nil {
		return nil, err
	}
	if m := codec.MediaType(); h.MediaType != m {
		return nil, refused(nil, "items are %s, this codec reads %s", h.MediaType, m)
	}
	if h.Count < 0 {
		return nil, refused(nil, "header says %d items (corrupted)", h.Count)
	}
	// A count is a claim until the items are read: each costs at least its 4-byte length, so
	// the preallocation is bounded and the slice grows with what is really there.
	items := make([]any, 0, min(h.Count, 4096))
	var buf []byte
	var decodeErr error
	for i := int64(0); i < h.Count; i++ {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := r.full(b[:4], fmt.Sprintf("item %d of %d", i, h.Count)); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(b[:4])
		if n > MaxItemBytes {
			return nil, refused(nil, "item %d of %d claims %d bytes, more than %d (corrupted)", i, h.Count, n, MaxItemBytes)
		}
		if buf, err = r.bytes(int64(n), buf, fmt.Sprintf("item %d of %d", i, h.Count)); err != nil {
			return nil, err
		}
		if decodeErr != nil {
			continue // read on to the checksum, which says whether the file is corrupted
		}
		obj, err := codec.Decode(buf)
		if err != nil {
			decodeErr = fmt.Errorf("item %d of %d does not decode as %s: %w", i, h.Count, h.MediaType, err)
			items = nil
			continue
		}
		items = append(items, obj)
	}
	if err := r.verify("file"); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, refused(decodeErr, "%v", decodeErr)
	}
	if _, err := r.r.ReadByte(); err != io.EOF {
		var rf *Refused
		if errors.As(err, &rf) {
			return nil, rf
		}
		if err != nil {
			return nil, refused(err, "reading past the end: %v", err)
		}
		return nil, refused(nil, "bytes after the end of the snapshot (corrupted)")
	}
	return &Snapshot{Identity: h.Identity, ResourceVersion: h.ResourceVersion, Written: h.Written, Items: items}, nil
}

// sameIdentity refuses a snapshot of another identity, naming every field that differs.
func sameIdentity(want, got Identity) error {
	wf, gf := want.fields(), got.fields()
	var diff []string
	for i := range wf {
		if wf[i].value != gf[i].value {
			diff = append(diff, fmt.Sprintf("%s %q, not %q", wf[i].name, gf[i].value, wf[i].value))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	reason := "another identity: " + diff[0]
	for _, d := range diff[1:] {
		reason += "; " + d
	}
	return refused(nil, "%s", reason)
}

// checksummedReader reads through a CRC; every read failure is a refusal.
type checksummedReader struct {
	r   *bufio.Reader
	crc hash.Hash32
}

// full fills b, or refuses: a file that ends early is truncated.
func (c *checksummedReader) full(b []byte, what string) error {
	if _, err := io.ReadFull(c.r, b); err != nil {
		return readRefusal(err, what)
	}
	c.crc.Write(b)
	return nil
}

// bytes reads n bytes into buf (reused when it is large enough). The buffer grows only with
// what is read, in steps, so a length the file does not back costs at most twice its bytes.
func (c *checksummedReader) bytes(n int64, buf []byte, what string) ([]byte, error) {
	if int64(cap(buf)) >= n {
		buf = buf[:n]
		return buf, c.full(buf, what)
	}
	var bb bytes.Buffer
	bb.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&bb, c.r, n); err != nil {
		return nil, readRefusal(err, what)
	}
	c.crc.Write(bb.Bytes())
	return bb.Bytes(), nil
}

// verify reads the CRC that follows and compares it with what was read.
func (c *checksummedReader) verify(what string) error {
	want := c.crc.Sum32()
	var b [4]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return readRefusal(err, "the "+what+" checksum")
	}
	c.crc.Write(b[:])
	if got := binary.BigEndian.Uint32(b[:]); got != want {
		return refused(nil, "%s checksum mismatch (stored %08x, computed %08x): corrupted", what, got, want)
	}
	return nil
}

func readRefusal(err error, what string) *Refused {
	var r *Refused
	if errors.As(err, &r) {
		return r // the store's own reason: a sealed snapshot's chunk that fails, say
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return refused(err, "truncated: the file ends in %s", what)
	}
	return refused(err, "reading %s: %v", what, err)
}
