package egressgrant

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/pkg/egress"
)

// EventBindFailed (Warning, on the call) says the operator could not tell the egress
// proxy the address of the attempt's Pod: until it can (it tries again within a second),
// the proxy holds that attempt's requests (up to 10 s) and then refuses them.
const EventBindFailed = "EgressBindFailed"

// bindTimeout bounds one binding request: a reconcile never waits longer on the proxy.
const bindTimeout = 2 * time.Second

// BindRetry is how soon a reconcile tries again a binding that failed.
const BindRetry = time.Second

// Binder binds each attempt's grant to its Pod: once the operator sees the running
// attempt's Pod with its address, it tells the proxy (POST egress.PodURL, {"ip": podIP}),
// which from then on honours the grant from that address only. Once per Pod: it remembers
// the Pods it bound (and those it reported a failure for) until their grant expires. Set
// Options and Recorder before its first use.
type Binder struct {
	// Options are the proxy's: where its binding endpoint is, and the key of its token.
	Options ProxyOptions
	// Recorder records EventBindFailed on the call (nil: no events).
	Recorder recorder.EventRecorder

	mu       sync.Mutex
	bound    map[types.UID]time.Time // Pod → when its grant expires
	reported map[types.UID]time.Time // Pods whose failure was reported by an event
}

// bindRequest is the body of the binding request.
type bindRequest struct {
	IP string `json:"ip"`
}

// Bind binds the grant of attempt (the call's current one, whose deadline is deadline) to
// pod, a Pod of the attempt that has not ended, when the Pod runs with an address and is not
// bound yet; now is the operator's clock. The caller checks that the call's tool goes out
// through the proxy (Uses). retry is true when the proxy was not told and should be, on a
// later reconcile (soon: BindRetry).
func (b *Binder) Bind(ctx context.Context, call *toolgatev1alpha1.ToolCall, pod *corev1.Pod, attempt int32, deadline, now time.Time) (retry bool) {
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil {
		return false // no address yet: the Pod's next status update brings it
	}
	// One Pod runs many attempts (a session Pod): a grant is bound per Pod and attempt.
	key := types.UID(fmt.Sprintf("%s/%s/%d", pod.UID, call.UID, attempt))
	if b.isBound(key) {
		return false
	}
	err = postPodBinding(ctx, b.Options, string(call.UID), attempt, ip.Unmap().String())
	if err == nil {
		b.markBound(key, GrantExpiry(deadline), now)
		ctrl.LoggerFrom(ctx).Info("bound the egress grant to its Pod", "pod", pod.Name, "attempt", attempt)
		return false
	}
	ctrl.LoggerFrom(ctx).Info("egress grant not bound to its Pod; retrying", "pod", pod.Name, "attempt", attempt, "error", err.Error())
	if b.firstFailure(key, GrantExpiry(deadline), now) {
		events.Emit(b.Recorder, call, corev1.EventTypeWarning, EventBindFailed, "BindEgress",
			fmt.Sprintf("the egress proxy could not be told the address of Pod %s (attempt %d): %v; until it is, the proxy holds the attempt's requests and then refuses them", pod.Name, attempt, err))
	}
	return true
}

// postPodBinding tells the proxy the address of an attempt's Pod.
func postPodBinding(ctx context.Context, o ProxyOptions, uid string, attempt int32, ip string) error {
	if o.RecordsURL == "" || len(o.Key) == 0 {
		return fmt.Errorf("no records URL configured (--egress-proxy-records-url)")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, bindTimeout)
	defer cancel()
	body, err := json.Marshal(bindRequest{IP: ip})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, egress.PodURL(o.RecordsURL, url.PathEscape(uid), attempt), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+egress.RecordsToken(o.Key))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func (b *Binder) isBound(pod types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.bound[pod]
	return ok
}

// markBound remembers pod as bound until expires, and forgets Pods whose grant expired.
func (b *Binder) markBound(pod types.UID, expires, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bound == nil {
		b.bound = map[types.UID]time.Time{}
	}
	b.bound[pod] = expires
	b.forgetExpired(now)
}

// forgetExpired forgets the Pods whose grant expired (the caller holds mu).
func (b *Binder) forgetExpired(now time.Time) {
	for _, m := range []map[types.UID]time.Time{b.bound, b.reported} {
		for uid, until := range m {
			if now.After(until) {
				delete(m, uid)
			}
		}
	}
}

// firstFailure is true the first time a failure is reported for pod.
func (b *Binder) firstFailure(pod types.UID, expires, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forgetExpired(now)
	if _, ok := b.reported[pod]; ok {
		return false
	}
	if b.reported == nil {
		b.reported = map[types.UID]time.Time{}
	}
	b.reported[pod] = expires
	return true
}
