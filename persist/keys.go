package persist

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of a sealing key: AES-256.
const KeySize = 32

// Key is a key that seals snapshots (Sealed). Make one with `openssl rand -base64 32`.
type Key [KeySize]byte

// ID names the key in a sealed snapshot's header and in logs: the first 8 bytes of a hash of
// it, which say nothing of the key but tell keys apart.
func (k Key) ID() string {
	id := k.id()
	return hex.EncodeToString(id[:])
}

func (k Key) id() [keyIDBytes]byte {
	h := sha256.New()
	h.Write([]byte("rewatch seal key id\x00"))
	h.Write(k[:])
	var out [keyIDBytes]byte
	copy(out[:], h.Sum(nil))
	return out
}

// String never shows the key.
func (k Key) String() string { return "key " + k.ID() }

// GoString never shows the key either (%#v).
func (k Key) GoString() string { return "persist.Key(" + k.ID() + ")" }

const keyIDBytes = 8

// ParseKeys reads sealing keys, one a line, newest first: each 32 bytes written in standard
// base64 (44 characters, as `openssl rand -base64 32` prints it) or in hex (64 characters).
// Blank lines and lines beginning with # are skipped. The first key seals what is written;
// every key opens what was (key rotation: put the new key first, keep the old ones until no
// snapshot sealed with them is left, a save period later). A key given twice is an error, and
// so is no key at all.
func ParseKeys(b []byte) ([]Key, error) {
	var keys []Key
	seen := map[Key]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := parseKey(s)
		if err != nil {
			return nil, fmt.Errorf("persist: key on line %d: %w", line, err)
		}
		if first, dup := seen[k]; dup {
			return nil, fmt.Errorf("persist: key on line %d is the key on line %d again", line, first)
		}
		seen[k] = line
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("persist: keys: %w", err)
	}
	if len(keys) == 0 {
		return nil, errors.New("persist: no key (one a line, base64 or hex of 32 bytes)")
	}
	return keys, nil
}

func parseKey(s string) (Key, error) {
	var k Key
	var raw []byte
	var err error
	switch len(s) {
	case 2 * KeySize:
		raw, err = hex.DecodeString(s)
	default:
		raw, err = base64.StdEncoding.DecodeString(s)
	}
	if err != nil {
		// Neither the input nor the error, which may quote it, goes into the message: it is
		// a secret, or near one.
		return k, fmt.Errorf("neither base64 nor hex of %d bytes", KeySize)
	}
	if len(raw) != KeySize {
		return k, fmt.Errorf("%d bytes, not %d", len(raw), KeySize)
	}
	copy(k[:], raw)
	return k, nil
}

// ReadKeyFile reads the keys of a file (ParseKeys): a Kubernetes Secret mounted as a volume,
// say.
func ReadKeyFile(path string) ([]Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("persist: keys: %w", err)
	}
	keys, err := ParseKeys(b)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return keys, nil
}
