package warmexec

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// PodAttach is the WarmExecutor of a real cluster: pods/attach to the signer container with
// stdin and stdout (no TTY), the Handover line as stdin — its end closes the container's
// stdin (stdinOnce) — and the runner's stdout streamed back until the container ends.
// WebSocket first, SPDY when the server cannot upgrade (kubectl's order).
type PodAttach struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
}

// Handover implements WarmExecutor.
func (a PodAttach) Handover(ctx context.Context, pod types.NamespacedName, line []byte) (WarmStream, error) {
	started := time.Now()
	req := a.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("attach").VersionedParams(&corev1.PodAttachOptions{
		Container: podcontract.SignerContainerName, Stdin: true, Stdout: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(a.Config, "GET", req.URL().String())
	if err != nil {
		return WarmStream{}, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(a.Config, "POST", req.URL())
	if err != nil {
		return WarmStream{}, err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return WarmStream{}, err
	}
	in := &handoverReader{r: bytes.NewReader(line)}
	out := &tailBuffer{limit: warmStdoutTail}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out})
	timings := StreamTimings{Started: started, Connected: in.firstAt(), FirstOutput: out.firstAt(), Ended: time.Now()}
	return WarmStream{HandedOver: in.doneAt(), StdoutTail: out.bytes(), Timings: timings}, err
}

// handoverReader records when the stream first read it (connected) and when the whole line
// was read (and so sent).
type handoverReader struct {
	mu    sync.Mutex
	r     io.Reader
	first time.Time
	done  time.Time
}

func (h *handoverReader) Read(p []byte) (int, error) {
	h.mu.Lock()
	if h.first.IsZero() {
		h.first = time.Now()
	}
	h.mu.Unlock()
	n, err := h.r.Read(p)
	if err == io.EOF {
		h.mu.Lock()
		if h.done.IsZero() {
			h.done = time.Now()
		}
		h.mu.Unlock()
	}
	return n, err
}

func (h *handoverReader) firstAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

func (h *handoverReader) doneAt() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

// tailBuffer keeps the last limit bytes written to it, and when the first arrived.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	first time.Time
}

func (t *tailBuffer) firstAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first.IsZero() && len(p) > 0 {
		t.first = time.Now()
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
