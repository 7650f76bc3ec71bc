package rewatch_test

// Security: TLS verification is on by default, and bearer tokens and client keys
// never reach logs, journals or errors; the journal holds object keys, not object contents,
// unless full capture is asked for.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/internal/syncbuf"
)

const (
	secretToken = "tok-SECRET-123"
	secretData  = "DATA-VALUE-XYZ"
)

// fastBackoff keeps the scripted failures below from taking seconds of real time.
var fastBackoff = backoff.Backoff{Duration: 5 * time.Millisecond, Factor: 1, Steps: 1, Cap: 5 * time.Millisecond}

// clientKeyPair is a client certificate and key in PEM, signed by nobody (the server only
// requests client certificates, so any will do).
func clientKeyPair(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rewatch-security-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// keyFragments are pieces of the key's PEM body that must never appear anywhere.
func keyFragments(keyPEM []byte) []string {
	var out []string
	for _, line := range strings.Split(string(keyPEM), "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			out = append(out, line[:40])
		}
	}
	return out
}

// hostileServer serves a LIST whose objects carry secretData, then one watch that delivers
// an ADDED event (also carrying secretData), then fails watches with 401, 500 and 429, then
// breaks the connection; after that every watch gets 401.
type hostileServer struct {
	srv     *httptest.Server
	watches atomic.Int64
	lists   atomic.Int64
	authOK  atomic.Bool
	certs   atomic.Bool
}

func newHostileServer(t *testing.T) *hostileServer {
	h := &hostileServer{}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	h.srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	return h
}

func configMap(name, rv, data string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "default", "resourceVersion": rv, "uid": "uid-" + name},
		"data":     map[string]any{"password": data},
	}
}

func writeStatus(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
		"message": fmt.Sprintf("scripted %d", code),
	})
}

func (h *hostileServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "Bearer "+secretToken {
		h.authOK.Store(true)
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		h.certs.Store(true)
	}
	if r.URL.Query().Get("watch") == "" {
		h.lists.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMapList", "metadata": map[string]any{"resourceVersion": "10"},
			"items": []any{configMap("cm-a", "5", secretData+"-a"), configMap("cm-b", "6", secretData+"-b")},
		})
		return
	}
	switch h.watches.Add(1) {
	case 1:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": configMap("cm-c", "11", secretData+"-c")})
		w.(http.Flusher).Flush()
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "ERROR", "object": map[string]any{
			"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "reason": "InternalError", "message": "scripted event"}})
	case 2:
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
	case 3:
		writeStatus(w, http.StatusInternalServerError, "InternalError")
	case 4:
		writeStatus(w, http.StatusTooManyRequests, "TooManyRequests")
	case 5:
		// A transport failure: the connection goes away without a response.
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = c.Close()
		}
	default:
		writeStatus(w, http.StatusUnauthorized, "Unauthorized")
	}
}

// captured runs a reflector against h with every output captured: the Debug log, the
// journal, Run's error and the errors of New and FromRESTConfig.
func capturedRun(t *testing.T, h *hostileServer, full bool, certPEM, keyPEM []byte) (all, journalText string) {
	t.Helper()
	var logs, jr syncbuf.Buffer
	rc := &rest.Config{
		Host: h.srv.URL, BearerToken: secretToken,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}),
			CertData: certPEM, KeyData: keyPEM,
		},
	}
	cfg, err := rewatch.FromRESTConfig(rc)
	require.NoError(t, err)
	cfg.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Journal, cfg.JournalFullCapture = &jr, full
	cfg.Backoff, cfg.Checked = fastBackoff, true
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	// Every scripted step, and a few of the 401s after them.
	ok := waitUntil(20*time.Second, func() bool { return h.watches.Load() >= 6 })
	require.True(t, ok, "the reflector did not go through the script: %d watches, %d lists\n%s", h.watches.Load(), h.lists.Load(), logs.String())
	cancel()
	runErr := <-done
	require.True(t, h.authOK.Load(), "the token never reached the server")
	require.True(t, h.certs.Load(), "the client certificate never reached the server")
	var out strings.Builder
	fmt.Fprintf(&out, "run error: %v\nstats: %+v\n", runErr, r.Stats())
	out.WriteString(logs.String())
	out.WriteString(jr.String())
	return out.String(), jr.String()
}

func TestSecretsNeverInLogsJournalsOrErrors(t *testing.T) {
	certPEM, keyPEM := clientKeyPair(t)
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full-capture=%v", full), func(t *testing.T) {
			h := newHostileServer(t)
			all, jr := capturedRun(t, h, full, certPEM, keyPEM)
			require.Contains(t, all, "level=DEBUG", "the Debug log is empty: nothing was checked")
			require.NotContains(t, all, secretToken)
			for _, frag := range keyFragments(keyPEM) {
				require.NotContains(t, all, frag, "client key material in the output")
			}
			// The journal names the objects …
			for _, key := range []string{"default/cm-c"} {
				require.Contains(t, jr, key)
			}
			// … but carries their contents only under full capture.
			if full {
				require.Contains(t, jr, secretData)
			} else {
				require.NotContains(t, all, secretData, "object contents in the log or journal without full capture")
			}
		})
	}
}

// A misconfigured rest.Config must not echo the token in FromRESTConfig's error.
func TestFromRESTConfigErrorsDoNotLeakToken(t *testing.T) {
	for _, rc := range []*rest.Config{
		{Host: "https://[::1", BearerToken: secretToken},
		{Host: "https://127.0.0.1", BearerToken: secretToken, TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a CA " + secretToken)}},
		{Host: "https://127.0.0.1", BearerToken: secretToken, BearerTokenFile: "/nonexistent/" + "x"},
	} {
		_, err := rewatch.FromRESTConfig(rc)
		if err != nil {
			require.NotContains(t, err.Error(), secretToken)
		}
	}
}

// TLS verification is on by default: a server whose CA the rest.Config does not name is
// rejected in the handshake, before any request (and so before the token) reaches it.
func TestTLSVerificationOnByDefault(t *testing.T) {
	var reached atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	// The server's handshake failures would be logged to stderr.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	var logs syncbuf.Buffer
	cfg, err := rewatch.FromRESTConfig(&rest.Config{Host: srv.URL, BearerToken: secretToken})
	require.NoError(t, err)
	cfg.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Backoff = fastBackoff
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "certificate") },
		10*time.Second, 5*time.Millisecond, "no certificate error logged:\n%s", logs.String())
	cancel()
	require.NoError(t, <-done)
	require.Zero(t, reached.Load(), "a request reached a server with an unknown CA")
	require.False(t, r.HasSynced())
	require.NotContains(t, logs.String(), secretToken)
}

func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
