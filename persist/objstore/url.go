package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/rewatch/rewatch/persist"
)

// OpenURL is the store a URL names, as the CLI's --cache-url takes it:
//
//	file:///var/cache/rewatch        persist.Dir("/var/cache/rewatch"), sealed when keys are given
//	s3://bucket/prefix?endpoint=…&region=…&path-style=true
//	                                 New: the bucket, the prefix (may be empty), and
//	                                 endpoint (host:port for HTTPS, or http://host:port), region,
//	                                 path-style; sealed, so keys are required
//
// Credentials for s3:// are DefaultCredentials'. Anything else in the URL — another scheme, a
// parameter it does not know, a host or query on file:// — is an error naming it.
func OpenURL(raw string, keys []persist.Key) (persist.Store, error) {
	o, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	if o == nil { // file://
		u, _ := url.Parse(raw)
		dir := persist.Dir(u.Path)
		if len(keys) == 0 {
			return dir, nil
		}
		st, err := persist.Sealed(dir, keys...)
		if err != nil {
			return nil, fmt.Errorf("objstore: %w", err)
		}
		return st, nil
	}
	o.Keys = keys
	return New(*o)
}

// ParseURL reads an s3:// URL into Options (without keys or credentials), and answers nil for a
// file:// URL; see OpenURL.
func ParseURL(raw string) (*Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("objstore: cache URL: %w", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("objstore: cache URL %q: a file URL names a local directory (file:///path), not host %q", raw, u.Host)
		}
		if u.Path == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("objstore: cache URL %q: give a directory as file:///path, with no query", raw)
		}
		return nil, nil
	case "s3":
	case "":
		return nil, fmt.Errorf("objstore: cache URL %q has no scheme: file:///path or s3://bucket/prefix", raw)
	default:
		return nil, fmt.Errorf("objstore: cache URL %q: scheme %q is not file or s3", raw, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("objstore: cache URL %q names no bucket (s3://bucket/prefix)", raw)
	}
	if u.User != nil {
		return nil, errors.New("objstore: cache URL: credentials do not go in the URL (they would be logged): use the environment or the workload's identity")
	}
	o := &Options{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q := u.Query()
	var unknown []string
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "endpoint":
			o.Endpoint = v
		case "region":
			o.Region = v
		case "path-style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("objstore: cache URL: path-style=%q is not true or false", v)
			}
			o.PathStyle = b
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("objstore: cache URL: unknown parameter %s (known: endpoint, region, path-style)", strings.Join(unknown, ", "))
	}
	return o, nil
}
