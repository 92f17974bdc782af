package notify_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/pkg/approvalevents"
)

var defaultKey = []byte("default-sink-key")

// request is one request a receiver got, as it came.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTPS server standing for a chat bot or paging service: it records
// every request and answers failFirst of them with 503 (all of them when failFirst < 0).
type receiver struct {
	*httptest.Server
	key []byte

	mu        sync.Mutex
	failFirst int
	got       []request
}

func newReceiver(key []byte) *receiver {
	r := &receiver{key: key}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, request{header: req.Header.Clone(), body: body})
	fail := r.failFirst < 0 || len(r.got) <= r.failFirst
	r.mu.Unlock()
	if fail {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// failing makes the receiver answer the first n requests with 503 (n < 0: all).
func (r *receiver) failing(n int) *receiver {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFirst = n
	return r
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

// verified decodes a request with the shipped receiver helper and the receiver's key.
func (r *receiver) verified(req request) (*approvalevents.Notification, error) {
	return verifyWith(r.key, req)
}

func verifyWith(key []byte, req request) (*approvalevents.Notification, error) {
	hr, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(req.body))
	if err != nil {
		return nil, err
	}
	hr.Header = req.header
	return approvalevents.Verifier{Keys: [][]byte{key}}.Request(hr)
}

// events returns the verified events of type eventType for the call ns/name that the
// receiver accepted (answered 2xx) or got at all; it fails the spec on a request that does
// not verify.
func (r *receiver) events(ns, name, eventType string) []*approvalevents.Notification {
	GinkgoHelper()
	var out []*approvalevents.Notification
	for _, req := range r.requests() {
		n, err := r.verified(req)
		Expect(err).NotTo(HaveOccurred(), "a request to the receiver does not verify: %s", req.body)
		if n.Event.Subject() == ns+"/"+name && n.Event.Type() == eventType {
			out = append(out, n)
		}
	}
	return out
}

func writeKeyFile(key []byte) string {
	GinkgoHelper()
	dir, err := os.MkdirTemp("", "toolgate-notify-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	p := filepath.Join(dir, "hmac-key")
	Expect(os.WriteFile(p, append(bytes.Clone(key), '\n'), 0o600)).To(Succeed())
	return p
}
