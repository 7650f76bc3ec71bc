package sim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// continueToken has the shape of k8s.io/apiserver storage's token, so a
// token from the simulator looks like one from the real server: base64url
// JSON of the list's RV and the key to resume at, relative to the request's
// key prefix. RV -1 means "continue at the latest RV" (handed out with a
// 410 after compaction).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// encodeContinue resumes at startKey ("ns/name" space). Callers resume
// after a key k with k+"\x00", the next possible key, as etcd ranges do.
func encodeContinue(startKey, prefix string, rv int64) string {
	b, _ := json.Marshal(continueToken{APIVersion: continueTokenVersion, ResourceVersion: rv,
		StartKey: strings.TrimPrefix(startKey, prefix)})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeContinue returns the absolute start key ("ns/name" space) and RV.
func decodeContinue(token, prefix string) (string, int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, errors.New("continue key is not valid: " + err.Error())
	}
	var t continueToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", 0, errors.New("continue key is not valid: " + err.Error())
	}
	if t.APIVersion != continueTokenVersion {
		return "", 0, errors.New("continue key is not valid: server does not recognize this encoded version")
	}
	if t.ResourceVersion == 0 {
		return "", 0, errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if t.StartKey == "" {
		return "", 0, errors.New("continue key is not valid: encoded start key empty")
	}
	if strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return "", 0, errors.New("continue key is not valid: key must not escape the list prefix")
	}
	return prefix + t.StartKey, t.ResourceVersion, nil
}
