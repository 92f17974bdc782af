package toolgatetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An operator run as a process of its own cannot use the Kubelet as its session transport
// in memory: ServeLogs also serves the Kubelet's session Pods (POST /session) and
// SessionClient calls it from the operator process (wrap it as the operator's session
// transport: test/chaos's sessionTransport; the kit's API names no operator type). The
// Handover is checked, recorded and played by the Kubelet in the harness process, exactly
// as sessionTransport does in one process; the HTTP request lives as long as the call (a
// killed operator process breaks it, as a killed operator breaks its TLS connection).

// sessionWire is the reply of POST /session.
type sessionWire struct {
	HandedOver time.Time `json:"handedOver,omitzero"`
	Bytes      []byte    `json:"bytes,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// serveSession plays one call of a session Pod (query: namespace, pod, uid; body: the
// Handover line).
func (k *Kubelet) serveSession(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	line, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name, pod.UID = q.Get("namespace"), q.Get("pod"), types.UID(q.Get("uid"))
	reply, err := k.sessionCall(req.Context(), pod, line)
	out := sessionWire{HandedOver: reply.HandedOver, Bytes: reply.Bytes}
	if err != nil {
		out.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// SessionClient hands session calls to the Kubelet of a ServeLogs server at Base.
type SessionClient struct{ Base string }

// Call writes the Handover line to the session Pod and returns, as the operator's session
// transport does, when the whole line was handed over (zero: it was not; the body did not
// run) and the reply up to its result line. When the exchange with the server fails (ctx
// ended, the connection broke), whether the Kubelet took the Handover is unknown: handedOver
// is then when the request was sent, so the operator never hands the attempt over again.
func (c SessionClient) Call(ctx context.Context, pod *corev1.Pod, line []byte) (handedOver time.Time, reply []byte, err error) {
	q := url.Values{"namespace": {pod.Namespace}, "pod": {pod.Name}, "uid": {string(pod.UID)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/session?"+q.Encode(), bytes.NewReader(line))
	if err != nil {
		return time.Time{}, nil, err
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sent, nil, fmt.Errorf("session server: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out sessionWire
	if resp.StatusCode != http.StatusOK {
		return sent, nil, fmt.Errorf("session server: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return sent, nil, fmt.Errorf("session server: %w", err)
	}
	if out.Error != "" {
		return out.HandedOver, out.Bytes, errors.New(out.Error)
	}
	return out.HandedOver, out.Bytes, nil
}
