package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/approvalevents"
)

// EventNotificationFailed is the Warning event reason on a call whose approval event could
// not be delivered to a sink.
const EventNotificationFailed = "ApprovalNotificationFailed"

// delivery is one event for one sink; a pointer, so each is its own queue item.
type delivery struct {
	origin, name, url string
	// scope and sinkName are a scope sink's ToolScope and name ("" for the default sink).
	scope, sinkName string
	keyFile         string
	secret          types.NamespacedName
	secretKey       string

	event v1alpha1.ApprovalEvent
	call  types.NamespacedName
	uid   types.UID
	// queued is when the event was queued (real time: a re-sent event's own time is older).
	queued time.Time
	body   []byte
}

// work delivers one queued item; false when the queue shut down.
func (n *Notifier) work(ctx context.Context) bool {
	d, shutdown := n.queue.Get()
	if shutdown {
		return false
	}
	defer n.queue.Done(d)
	attempt := n.queue.NumRequeues(d) + 1
	err := n.attempt(ctx, d, attempt)
	switch {
	case err == nil:
		n.finish(d)
		metrics.ApprovalNotifications.WithLabelValues(string(d.event), d.origin, "delivered").Inc()
		metrics.ApprovalNotificationLatency.WithLabelValues(d.origin).Observe(time.Since(d.queued).Seconds())
	case ctx.Err() != nil:
		n.finish(d)
	case errors.Is(err, errPermanent) || attempt >= n.opts.MaxAttempts:
		n.finish(d)
		metrics.ApprovalNotifications.WithLabelValues(string(d.event), d.origin, "failed").Inc()
		n.log.Error(err, "approval notification failed", "toolCall", d.call, "sink", d.name, "event", d.event,
			"attempts", attempt, "cause", cause(err))
		n.reportFailure(d, attempt, err)
	default:
		metrics.ApprovalNotificationRetries.WithLabelValues(string(d.event), d.origin).Inc()
		n.log.V(1).Info("approval notification will be retried", "toolCall", d.call, "sink", d.name, "attempt", attempt,
			"error", err.Error(), "cause", cause(err))
		n.queue.AddRateLimited(d)
	}
	return true
}

// reportFailure records a delivery given up as a Warning event on the call. The events
// API folds events of one object with the same type, reason, action and related object
// into one series, whose later occurrences reach the API server only as a count minutes
// later: the action names the approval event and the related object the sink (its
// ToolScope, the sink's name in fieldPath), so that each failure is an Event of its own.
func (n *Notifier) reportFailure(d *delivery, attempt int, err error) {
	if n.rec == nil {
		return
	}
	call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: d.call.Namespace, Name: d.call.Name, UID: d.uid}}
	var related runtime.Object
	if d.scope != "" {
		related = &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolScope",
			Namespace: d.call.Namespace, Name: d.scope, FieldPath: "spec.approvalSinks{" + d.sinkName + "}"}
	}
	n.rec.Eventf(call, related, corev1.EventTypeWarning, EventNotificationFailed, "Notify"+string(d.event),
		"approval event %s not delivered to sink %s after %d attempt(s): %s", d.event, d.name, attempt, bounded(err.Error()))
}

func (n *Notifier) finish(d *delivery) {
	n.queue.Forget(d)
	n.pending.Add(-1)
}

// attempt signs and POSTs the body once.
func (n *Notifier) attempt(ctx context.Context, d *delivery, attempt int) error {
	key, err := n.key(ctx, d)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		// The error repeats the URL, which may hold a token: keep it to the log.
		return fmt.Errorf("%w: %w", errPermanent, &unreachable{cause: fmt.Errorf("the sink's url is not valid: %w", err)})
	}
	ts, sig := approvalevents.Sign(key, d.body, time.Now())
	req.Header.Set("Content-Type", approvalevents.ContentType)
	req.Header.Set("User-Agent", "toolgate-operator")
	req.Header.Set(approvalevents.HeaderTimestamp, ts)
	req.Header.Set(approvalevents.HeaderSignature, sig)
	req.Header.Set(approvalevents.HeaderAttempt, strconv.Itoa(attempt))
	hc := n.http
	if d.origin == originScope {
		hc = n.scopeHTTP
	}
	start := time.Now()
	resp, err := hc.Do(req)
	result := "error"
	defer func() {
		metrics.ApprovalNotificationAttempt.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}()
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL may hold a token in its query: do not repeat it
		}
		return &unreachable{cause: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		result = "ok"
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("the sink answered %s", resp.Status)
	default:
		return fmt.Errorf("%w: the sink answered %s", errPermanent, resp.Status)
	}
}

// unreachable is a delivery that got no answer: an address the policy refuses, a name
// that does not resolve, a connection refused, reset or timed out, a failed TLS handshake.
// The call's event says only that, the same for all of them, so that a sink's URL cannot
// tell the writer of a ToolScope which ports of which hosts are open; the operator's log
// carries the cause.
type unreachable struct{ cause error }

func (e *unreachable) Error() string { return "the sink is unreachable" }
func (e *unreachable) Unwrap() error { return e.cause }

// cause is the detail of err for the operator's log.
func cause(err error) string {
	var u *unreachable
	if errors.As(err, &u) {
		return u.cause.Error()
	}
	return err.Error()
}

// key reads the sink's HMAC key: the default sink's file (re-read each time, so a rotated
// Secret mount applies), or the named key of the named Secret in the call's namespace.
func (n *Notifier) key(ctx context.Context, d *delivery) ([]byte, error) {
	if d.keyFile != "" {
		b, err := os.ReadFile(d.keyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the default sink's key: %w", err)
		}
		key := bytes.TrimRight(b, "\r\n")
		if len(key) == 0 {
			return nil, fmt.Errorf("%w: the default sink's key file %s is empty", errPermanent, d.keyFile)
		}
		return key, nil
	}
	s := &corev1.Secret{}
	err := n.secrets.Get(ctx, d.secret, s)
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%w: the operator may not read Secret %s (see the chart's approvalNotifications.secretNamespaces): %w", errPermanent, d.secret, err)
	case apierrors.IsNotFound(err) || err == nil && s.Type != v1alpha1.SecretTypeApprovalSinkKey:
		// One answer for both, retried alike (a Secret may be on its way): a scope's writer
		// who may not read Secrets learns neither whether a Secret exists nor its type.
		return nil, fmt.Errorf("no Secret %s of type %s: only a Secret made for it is an approval sink's key", d.secret, v1alpha1.SecretTypeApprovalSinkKey)
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", d.secret, err)
	}
	key := s.Data[d.secretKey]
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: Secret %s has no key %q", errPermanent, d.secret, d.secretKey)
	}
	return key, nil
}

func bounded(s string) string {
	const limit = 512
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
