// Package objstore keeps rewatch's persisted cache in object storage: a persist.Store over any
// server of the S3 API (AWS S3, Google Cloud Storage's XML API with HMAC keys, MinIO,
// SeaweedFS, Ceph RGW, …), shared by every replica of a controller, so that a rollout's new pods
// — each with an empty emptyDir, usually on another node — start from the snapshot the pods
// before them saved instead of listing everything (docs/semantics.md, "Persisted cache",
// "In object storage").
//
// It is a module of its own so that the library's consumers take on no S3 client unless they
// use it. The protocol is minio-go's: no request is signed here.
//
// Every snapshot is sealed (persist.Sealed): a bucket's readers and writers are whoever holds
// its credentials, not the controller's user on one disk, so a snapshot is encrypted and
// authenticated with keys the controller holds, and one it did not seal is refused. Snapshots
// stream up, as a multipart upload of PartSize parts, and down; the object is replaced only when
// the upload completes, so a save that is cut leaves the previous snapshot whole and readable.
// Replicas share it safely: a save never replaces a snapshot at a later resourceVersion (a
// conditional write on the object's ETag, the resourceVersion in its metadata).
package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/rewatch/rewatch/persist"
)

// Options says where the snapshots are kept and how to reach them.
type Options struct {
	// Endpoint is the S3 server: host[:port] (HTTPS), or a URL whose scheme says http or
	// https. Default: s3.amazonaws.com.
	Endpoint string
	// Region is the bucket's region; "" asks the server (one more request at the first use).
	Region string
	// Bucket must exist; the store creates no bucket.
	Bucket string
	// Prefix is put before every object's name (persist.FileName of its identity): one prefix
	// for each controller that shares the bucket, say.
	Prefix string
	// Keys seal every snapshot (persist.Sealed): the first seals, every one opens. Required.
	Keys []persist.Key
	// Credentials sign the requests. Default: the environment's AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY (or MinIO's MINIO_ROOT_USER…), then the AWS credentials file,
	// then the workload's own identity: an IRSA web identity token
	// (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), EKS Pod Identity or ECS
	// (AWS_CONTAINER_CREDENTIALS_FULL_URI), or the EC2 instance's role.
	Credentials *credentials.Credentials
	// Transport carries the requests. Default: http.DefaultTransport's settings with a 10 s
	// connect timeout and a 30 s wait for a response's headers, so that a store that is
	// unreachable fails a load or a save instead of holding it.
	Transport http.RoundTripper
	// PartSize is what a save buffers of a snapshot before it uploads it as one part of a
	// multipart upload: the memory a save holds. At least 5 MiB (S3's least part); default
	// 5 MiB. A snapshot smaller than one part is one PUT.
	PartSize int64
	// ReplaceAfter is how long a snapshot at a later resourceVersion than a save's is kept
	// from it: a snapshot that old was not written by a replica of the same cluster's present
	// (whose resourceVersions only grow), but before the cluster was recreated or restored
	// from a backup, and is replaced. Default 10 minutes.
	ReplaceAfter time.Duration
	// FreshFor is how young a snapshot must be for a save to keep it although the save is
	// newer: the replicas of a controller hold the same state, and a start from a snapshot
	// this young catches up through the watch (kube-apiserver keeps at least 75 s of
	// history), so N replicas upload about once per FreshFor rather than N times per save
	// period; for the same reason a save begins no upload while another writer's, begun less
	// than UploadingFor ago, is in progress. Default 10 s; negative: every newer save replaces
	// the snapshot.
	FreshFor time.Duration
	// MaxRetries is how many times a request that failed is tried again by minio-go (a
	// network error, a 5xx). Default 2.
	MaxRetries int
	// PathStyle addresses the bucket in the path (https://host/bucket/key) rather than in the
	// host name; by default minio-go picks (virtual hosts for AWS, paths elsewhere).
	PathStyle bool
}

// MinPartSize is S3's least part of a multipart upload but the last.
const MinPartSize = 5 << 20

// Defaults of Options.ReplaceAfter and Options.FreshFor.
const (
	DefaultReplaceAfter = 10 * time.Minute
	DefaultFreshFor     = 10 * time.Second
)

// New is the sealed store of o: snapshots under o.Prefix in o.Bucket. It contacts nothing:
// a bucket that is unreachable or missing fails the first load (the reflector starts plainly,
// saying why once) and every save (said once, and again when one works).
func New(o Options) (persist.Store, error) {
	b, err := newBucket(o)
	if err != nil {
		return nil, err
	}
	if len(o.Keys) == 0 {
		return nil, errors.New("objstore: no sealing key: snapshots in a bucket are sealed (persist.Sealed), and whoever can write to the bucket could otherwise make the controller load theirs")
	}
	st, err := persist.Sealed(b, o.Keys...)
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	return st, nil
}

// bucket is the store in clear, which persist.Sealed wraps.
type bucket struct {
	core                *minio.Core
	name, prefix, where string
	partSize            int64
	replaceAfter        time.Duration
	freshFor            time.Duration
	now                 func() time.Time
	// swept holds the objects whose abandoned uploads were looked for, once per process.
	swept sync.Map
}

func newBucket(o Options) (*bucket, error) {
	if o.Bucket == "" {
		return nil, errors.New("objstore: no bucket")
	}
	endpoint, secure := o.Endpoint, true
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("objstore: endpoint: %w", err)
		}
		switch u.Scheme {
		case "http":
			secure = false
		case "https":
		default:
			return nil, fmt.Errorf("objstore: endpoint %q: the scheme must be http or https", endpoint)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("objstore: endpoint %q: a path is not supported", endpoint)
		}
		endpoint = u.Host
	}
	switch {
	case o.PartSize == 0:
		o.PartSize = MinPartSize
	case o.PartSize < MinPartSize:
		return nil, fmt.Errorf("objstore: PartSize %d is less than S3's least part, %d", o.PartSize, MinPartSize)
	}
	if o.ReplaceAfter == 0 {
		o.ReplaceAfter = DefaultReplaceAfter
	}
	switch {
	case o.FreshFor == 0:
		o.FreshFor = DefaultFreshFor
	case o.FreshFor < 0:
		o.FreshFor = 0
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 2
	}
	if o.Credentials == nil {
		o.Credentials = DefaultCredentials()
	}
	if o.Transport == nil {
		o.Transport = defaultTransport()
	}
	lookup := minio.BucketLookupAuto
	if o.PathStyle {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(endpoint, &minio.Options{
		Creds: o.Credentials, Secure: secure, Region: o.Region, Transport: o.Transport,
		BucketLookup: lookup, MaxRetries: o.MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("objstore: %w", err)
	}
	scheme := "https"
	if !secure {
		scheme = "http"
	}
	prefix := strings.Trim(o.Prefix, "/")
	return &bucket{core: core, name: o.Bucket, prefix: prefix, where: scheme + "://" + endpoint + "/" + path.Join(o.Bucket, prefix),
		partSize: o.PartSize, replaceAfter: o.ReplaceAfter, freshFor: o.FreshFor, now: time.Now}, nil
}

// DefaultCredentials is Options.Credentials' default chain.
func DefaultCredentials() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.EnvMinio{}, &credentials.FileAWSCredentials{},
		&credentials.IAM{Client: &http.Client{Transport: defaultTransport()}},
	})
}

func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = 30 * time.Second
	t.TLSHandshakeTimeout = 10 * time.Second
	return t
}

// String names the place, for logs: https://host/bucket/prefix.
func (b *bucket) String() string { return b.where }

func (b *bucket) object(id persist.Identity) string {
	if b.prefix == "" {
		return persist.FileName(id)
	}
	return b.prefix + "/" + persist.FileName(id)
}

// Metadata the store writes with each object (x-amz-meta-…): what a save compares before it
// replaces the object, without reading it.
const (
	metaRV      = "Rewatch-Resource-Version"
	metaWritten = "Rewatch-Written"
)

func (b *bucket) Open(ctx context.Context, id persist.Identity) (io.ReadCloser, error) {
	body, _, _, err := b.core.GetObject(ctx, b.name, b.object(id), minio.GetObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, persist.ErrNotFound
		}
		return nil, fmt.Errorf("objstore: get %s/%s: %w", b.where, persist.FileName(id), err)
	}
	return body, nil
}

func (b *bucket) Create(ctx context.Context, id persist.Identity) (persist.Pending, error) {
	return b.CreateFor(ctx, id, persist.SnapshotInfo{})
}

// CreateFor begins an upload of id's snapshot, unless the bucket holds one at least as new
// (persist.ErrSuperseded): written by another replica at the same or a later resourceVersion,
// less than ReplaceAfter ago, or at an earlier one less than FreshFor ago, or being uploaded
// by another replica (anotherUploading).
func (b *bucket) CreateFor(ctx context.Context, id persist.Identity, info persist.SnapshotInfo) (persist.Pending, error) {
	key := b.object(id)
	b.sweep(ctx, key)
	held, err := b.head(ctx, key)
	if err != nil {
		return nil, err
	}
	if b.keeps(held, info) || b.anotherUploading(ctx, key, held, info) {
		return nil, persist.ErrSuperseded
	}
	meta := map[string]string{metaRV: info.ResourceVersion}
	if !info.Written.IsZero() {
		meta[metaWritten] = info.Written.UTC().Format(time.RFC3339Nano)
	}
	return &upload{b: b, ctx: ctx, key: key, info: info, held: held, meta: meta, buf: make([]byte, 0, b.partSize)}, nil
}

// heldObject is what the bucket holds under a key, as its metadata says.
type heldObject struct {
	exists   bool
	etag     string
	rv       string
	modified time.Time
}

func (b *bucket) head(ctx context.Context, key string) (heldObject, error) {
	info, err := b.core.StatObject(ctx, b.name, key, minio.StatObjectOptions{})
	if err != nil {
		if r := minio.ToErrorResponse(err); r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound && r.Code != minio.NoSuchBucket {
			return heldObject{}, nil
		}
		return heldObject{}, fmt.Errorf("objstore: head %s/%s: %w", b.where, path.Base(key), err)
	}
	h := heldObject{exists: true, etag: info.ETag, modified: info.LastModified}
	for k, v := range info.UserMetadata {
		if strings.EqualFold(k, metaRV) || strings.EqualFold(k, "X-Amz-Meta-"+metaRV) {
			h.rv = v
		}
	}
	return h, nil
}

// keeps says whether the bucket's object is to be kept rather than replaced by the snapshot
// info describes, unless it is the snapshot this writer disowned at its start: when it is at
// info's resourceVersion or later (both decimal etcd revisions, as kube-apiserver writes
// them) and younger than ReplaceAfter, or older but younger than FreshFor. An object whose
// resourceVersion cannot be compared is replaced.
func (b *bucket) keeps(h heldObject, info persist.SnapshotInfo) bool {
	if !h.exists || h.rv == info.Disowned {
		return false
	}
	held, err1 := strconv.ParseUint(h.rv, 10, 64)
	ours, err2 := strconv.ParseUint(info.ResourceVersion, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	age := b.now().Sub(h.modified)
	if held < ours {
		return age < b.freshFor
	}
	return age < b.replaceAfter
}

// UploadingFor is how long another writer's upload in progress keeps a save from beginning one
// of its own (FreshFor): an upload of a snapshot takes seconds; one begun longer ago is taken
// for the parts of a writer that was killed or cut off.
const UploadingFor = time.Minute

// anotherUploading says whether a save is to leave the snapshot to a multipart upload of key
// that another writer began less than UploadingFor ago and has not completed. The replicas hold
// the same state, so that snapshot is as fresh as FreshFor asks when it lands, and an upload
// begun meanwhile would only lose at its completion, its parts spent: a rollout's pods stop,
// and save, a fraction of a second apart, each upload taking seconds. Not when FreshFor is
// off, nor for a save that replaces the snapshot it disowned (that upload may be no replica's
// of this cluster). A store that cannot list uploads is taken to have none in progress.
func (b *bucket) anotherUploading(ctx context.Context, key string, held heldObject, info persist.SnapshotInfo) bool {
	if b.freshFor <= 0 || (held.exists && held.rv == info.Disowned) {
		return false
	}
	res, err := b.core.ListMultipartUploads(ctx, b.name, key, "", "", "", 100)
	if err != nil {
		return false
	}
	for _, u := range res.Uploads {
		if u.Key == key && b.now().Sub(u.Initiated) < UploadingFor {
			return true
		}
	}
	return false
}

// sweep aborts the uploads of key that were begun more than a day ago and never completed nor
// aborted (a writer killed mid-save leaves its parts), once per process and key. A bucket's
// lifecycle rule (AbortIncompleteMultipartUpload) does the same for keys no one saves again.
func (b *bucket) sweep(ctx context.Context, key string) {
	if _, done := b.swept.LoadOrStore(key, true); done {
		return
	}
	res, err := b.core.ListMultipartUploads(ctx, b.name, key, "", "", "", 100)
	if err != nil {
		return // best effort: a server without the listing still saves
	}
	for _, u := range res.Uploads {
		if u.Key == key && b.now().Sub(u.Initiated) > 24*time.Hour {
			_ = b.core.AbortMultipartUpload(ctx, b.name, key, u.UploadID)
		}
	}
}

// upload is a snapshot on its way up: buffered a part at a time, a multipart upload begun once
// a whole part is written; committed as one conditional PUT when the snapshot is smaller than
// a part, or as the multipart upload's conditional completion.
type upload struct {
	b    *bucket
	ctx  context.Context
	key  string
	info persist.SnapshotInfo
	held heldObject
	meta map[string]string
	buf  []byte

	uploadID string
	parts    []minio.CompletePart
	done     bool
	err      error
}

func (u *upload) Write(p []byte) (int, error) {
	if u.done {
		return 0, errors.New("objstore: write after Commit or Abort")
	}
	written := 0
	for len(p) > 0 {
		if u.err != nil {
			return written, u.err
		}
		if len(u.buf) == cap(u.buf) {
			u.err = u.flushPart()
			continue
		}
		c := copy(u.buf[len(u.buf):cap(u.buf)], p)
		u.buf = u.buf[:len(u.buf)+c]
		p = p[c:]
		written += c
	}
	return written, u.err
}

// flushPart uploads what is buffered as the next part, beginning the multipart upload first.
func (u *upload) flushPart() error {
	b := u.b
	if u.uploadID == "" {
		id, err := b.core.NewMultipartUpload(u.ctx, b.name, u.key, u.putOptions())
		if err != nil {
			return fmt.Errorf("objstore: begin the upload of %s/%s: %w", b.where, path.Base(u.key), err)
		}
		u.uploadID = id
	}
	n := len(u.parts) + 1
	// The part's SHA-256 is signed as its payload's: over plain HTTP minio-go would otherwise
	// sign it in aws-chunked frames, which not every server reads.
	part, err := b.core.PutObjectPart(u.ctx, b.name, u.key, u.uploadID, n, bytes.NewReader(u.buf), int64(len(u.buf)),
		minio.PutObjectPartOptions{Sha256Hex: sha256Hex(u.buf), DisableContentSha256: true})
	if err != nil {
		return fmt.Errorf("objstore: upload part %d of %s/%s: %w", n, b.where, path.Base(u.key), err)
	}
	u.parts = append(u.parts, minio.CompletePart{PartNumber: n, ETag: part.ETag})
	u.buf = u.buf[:0]
	return nil
}

func (u *upload) putOptions() minio.PutObjectOptions {
	return minio.PutObjectOptions{UserMetadata: u.meta, ContentType: "application/octet-stream", DisableContentSha256: true}
}

// conditional is a write's options with its condition: the object the save decided to replace
// (If-Match its ETag), or none (If-None-Match: *).
func (u *upload) conditional() minio.PutObjectOptions {
	o := u.putOptions()
	if u.held.exists {
		o.SetMatchETag(u.held.etag)
	} else {
		o.SetMatchETagExcept("*")
	}
	return o
}

// maxConditionTries bounds how many times a write whose condition failed (another replica
// wrote meanwhile) looks again and retries.
const maxConditionTries = 4

func (u *upload) Commit() error {
	if u.done {
		return errors.New("objstore: Commit after Commit or Abort")
	}
	u.done = true
	if u.err != nil {
		return errors.Join(u.err, u.abort())
	}
	b := u.b
	if u.uploadID == "" {
		return u.retryOnCondition(func() error {
			_, err := b.core.PutObject(u.ctx, b.name, u.key, bytes.NewReader(u.buf), int64(len(u.buf)), "", sha256Hex(u.buf), u.conditional())
			return err
		})
	}
	if len(u.buf) > 0 {
		if err := u.flushPart(); err != nil {
			return errors.Join(err, u.abort())
		}
	}
	err := u.retryOnCondition(func() error {
		_, err := b.core.CompleteMultipartUpload(u.ctx, b.name, u.key, u.uploadID, u.parts, u.conditional())
		return err
	})
	if err != nil {
		return errors.Join(err, u.abort())
	}
	return nil
}

// retryOnCondition writes, and when the write's condition failed — another replica replaced
// the object since it was looked at — looks again: a snapshot at least as new is kept
// (persist.ErrSuperseded); an older one is replaced, on its new ETag.
func (u *upload) retryOnCondition(write func() error) error {
	b := u.b
	for try := 1; ; try++ {
		err := write()
		if err == nil || !conditionFailed(err) {
			if err != nil {
				return fmt.Errorf("objstore: write %s/%s: %w", b.where, path.Base(u.key), err)
			}
			return nil
		}
		if try == maxConditionTries {
			return fmt.Errorf("objstore: write %s/%s: replaced by other writers %d times while this one was written: %w", b.where, path.Base(u.key), try, err)
		}
		held, herr := b.head(u.ctx, u.key)
		if herr != nil {
			return herr
		}
		if b.keeps(held, u.info) {
			return persist.ErrSuperseded
		}
		u.held = held
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// conditionFailed is a write refused for its condition: 412, or AWS's 409 for a conditional
// write that raced another.
func conditionFailed(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed" || r.Code == "ConditionalRequestConflict"
}

func (u *upload) Abort() error {
	if u.done {
		return nil
	}
	u.done = true
	return u.abort()
}

// abort drops the multipart upload, if one was begun; with a context of its own, as the save's
// may be what ended (a stop).
func (u *upload) abort() error {
	if u.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), 30*time.Second)
	defer cancel()
	if err := u.b.core.AbortMultipartUpload(ctx, u.b.name, u.key, u.uploadID); err != nil {
		return fmt.Errorf("objstore: abort the upload of %s/%s: %w", u.b.where, path.Base(u.key), err)
	}
	return nil
}
