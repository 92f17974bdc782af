// Package notify sends approval CloudEvents (pkg/approvalevents) to the sinks configured for
// a call: the operator's default sink and the approvalSinks of the call's ToolScope and its
// ancestors. Deliveries go through an in-memory rate-limited work queue with their own
// workers, so the reconciler never waits for a sink; a sink that fails is retried with
// exponential backoff up to a bound, then counted and reported as a Warning event on the
// call. The call itself never depends on a delivery.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/approvalevents"
	"github.com/toolgate/toolgate/pkg/display"
	"github.com/toolgate/toolgate/pkg/notifyconfig"
)

// Options configure the notifier; DefaultSink is the operator's own sink. Both are defined
// in pkg/notifyconfig, so that controllers.Options and the test kit can expose them to
// other modules: add a setting there.
type (
	Options       = notifyconfig.Options
	DefaultSink   = notifyconfig.DefaultSink
	AddressPolicy = notifyconfig.AddressPolicy
)

// DefaultOptions are the settings of a notifier given none.
func DefaultOptions() Options { return notifyconfig.DefaultOptions() }

// CheckURL applies the rule the ToolScope CRD enforces on a sink's url: https, or http to a
// cluster Service name.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "https" && host != "":
		return nil
	case u.Scheme == "http" && (strings.HasSuffix(host, ".svc") || strings.HasSuffix(host, ".svc.cluster.local")):
		return nil
	}
	return fmt.Errorf("sink url %q: want https://, or http:// to a cluster Service (a host ending in .svc or .svc.cluster.local)", raw)
}

// Event is one approval transition of a call, already recorded in its status.
type Event struct {
	Kind v1alpha1.ApprovalEvent
	// Scope is the call's spec.scope: its sinks and its ancestors' apply.
	Scope string
	// At is when the transition was recorded.
	At   time.Time
	Data approvalevents.Data
}

// Notifier queues and delivers approval events.
type Notifier struct {
	opts    Options
	scopes  client.Reader
	secrets client.Reader
	rec     recorder.EventRecorder
	// http sends to the default sink; scopeHTTP to scopes' sinks, dialling only addresses
	// that opts.Addresses allows.
	http, scopeHTTP *http.Client
	log             logr.Logger
	queue           workqueue.TypedRateLimitingInterface[*delivery]
	pending         atomic.Int64
	// requested remembers the calls whose Requested event this process queued (by call,
	// with its uid): a call still parked after a restart is announced again, once.
	requested sync.Map
}

// New returns a notifier reading ToolScopes through scopes (the cache) and sink Secrets
// through secrets (a direct reader: no Secret informer, only the named Secret is read).
func New(opts Options, scopes, secrets client.Reader, rec recorder.EventRecorder) *Notifier {
	def := DefaultOptions()
	if opts.Workers <= 0 {
		opts.Workers = def.Workers
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = def.MaxAttempts
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = def.BaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = def.MaxDelay
	}
	if opts.Timeout <= 0 {
		opts.Timeout = def.Timeout
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = def.MaxPending
	}
	return &Notifier{opts: opts, scopes: scopes, secrets: secrets, rec: rec,
		http: newClient(opts, nil), scopeHTTP: newClient(opts, &opts.Addresses),
		log: ctrl.Log.WithName("approval-notify"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[*delivery](opts.BaseDelay, opts.MaxDelay),
			workqueue.TypedRateLimitingQueueConfig[*delivery]{Name: "approval_notifications"})}
}

// newClient returns a client that follows no redirect (a 3xx is an answer), bounded by
// opts.Timeout. With a policy it dials only the addresses the policy allows, directly: an
// HTTP proxy from the environment would connect on its behalf to any address.
func newClient(opts Options, policy *AddressPolicy) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if opts.TLSConfig != nil {
		t.TLSClientConfig = opts.TLSConfig.Clone()
	}
	if policy != nil {
		t.Proxy = nil
		d := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second, Control: dialControl(*policy)}
		t.DialContext = d.DialContext
	}
	return &http.Client{Transport: t, Timeout: opts.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// FirstRequest reports whether the call's Requested event has not been queued by this
// process yet, and marks it queued.
func (n *Notifier) FirstRequest(key types.NamespacedName, uid types.UID) bool {
	prev, loaded := n.requested.Swap(key, uid)
	return !loaded || prev.(types.UID) != uid
}

// Forget drops what the notifier remembers of a call (it was decided or deleted).
func (n *Notifier) Forget(key types.NamespacedName) { n.requested.Delete(key) }

// Notify queues ev for every sink that applies to the call and wants it. It never blocks
// on a sink: it reads ToolScopes from the cache and adds to the in-memory queue.
func (n *Notifier) Notify(ctx context.Context, ev Event) {
	d := &ev.Data
	// Receivers show these to people as they are (a chat message, a page): what the agent
	// wrote into them leaves escaped.
	d.Card, d.Message, d.Requester = shownCard(d.Card), display.Line(d.Message), display.Line(d.Requester)
	d.ApproveCommand = "toolgate approve " + d.Name + " -n " + d.Namespace
	d.DenyCommand = "toolgate deny " + d.Name + " -n " + d.Namespace
	if n.opts.ConsoleURL != "" {
		d.ConsoleURL = strings.TrimRight(n.opts.ConsoleURL, "/") + "/calls/" + url.PathEscape(d.Namespace) + "/" + url.PathEscape(d.Name)
	}
	sinks := n.sinks(ctx, ev)
	if len(sinks) == 0 {
		return
	}
	body, err := approvalevents.Marshal(eventType(ev.Kind), ev.Data, ev.At)
	if err != nil {
		n.log.Error(err, "cannot build the approval event", "toolCall", d.Namespace+"/"+d.Name)
		return
	}
	for _, s := range sinks {
		s.body, s.event, s.queued = body, ev.Kind, time.Now()
		s.call = types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
		s.uid = types.UID(d.UID)
		if n.pending.Add(1) > int64(n.opts.MaxPending) {
			n.pending.Add(-1)
			metrics.ApprovalNotifications.WithLabelValues(string(ev.Kind), s.origin, "dropped").Inc()
			n.log.Info("approval notification dropped: too many pending", "toolCall", s.call, "sink", s.name)
			continue
		}
		n.queue.Add(s)
	}
}

// shownCard is a card as display.Line shows it, within the card's bound
// (pipeline.MaxPresentBytes): escapes make it longer than the text it shows.
func shownCard(card string) string {
	s := display.Line(card)
	if len(s) <= pipeline.MaxPresentBytes {
		return s
	}
	// The note's count is never longer than len(s): room for it is room enough.
	kept := pipeline.UTF8Prefix(s, pipeline.MaxPresentBytes-len(fmt.Sprintf("… [card cut: %d more bytes]", len(s))))
	return kept + fmt.Sprintf("… [card cut: %d more bytes]", len(s)-len(kept))
}

// sinks lists the deliveries of ev: the default sink, then the scope's and its ancestors'.
func (n *Notifier) sinks(ctx context.Context, ev Event) []*delivery {
	var out []*delivery
	if def := n.opts.Default; def != nil && def.URL != "" && wants(def.Events, ev.Kind) {
		out = append(out, &delivery{origin: originDefault, name: "default", url: def.URL, keyFile: def.KeyFile})
	}
	seen := map[string]bool{}
	for scope := ev.Scope; scope != "" && !seen[scope] && len(seen) < maxChain; {
		seen[scope] = true
		s := &v1alpha1.ToolScope{}
		if err := n.scopes.Get(ctx, types.NamespacedName{Namespace: ev.Data.Namespace, Name: scope}, s); err != nil {
			if client.IgnoreNotFound(err) != nil {
				n.log.Error(err, "cannot read the scope's approval sinks", "scope", scope, "namespace", ev.Data.Namespace)
			}
			break
		}
		for i := range s.Spec.ApprovalSinks {
			sink := &s.Spec.ApprovalSinks[i]
			if !sink.Wants(ev.Kind) {
				continue
			}
			key := sink.SecretRef.Key
			if key == "" {
				key = v1alpha1.DefaultSecretKey
			}
			out = append(out, &delivery{origin: originScope, name: scope + "/" + sink.Name, url: sink.URL, scope: scope, sinkName: sink.Name,
				secret: types.NamespacedName{Namespace: ev.Data.Namespace, Name: sink.SecretRef.Name}, secretKey: key})
		}
		scope = s.Spec.Parent
	}
	return dedupe(out)
}

// dedupe drops a sink that repeats an earlier one (same URL and key): a parent and a child
// scope naming one endpoint get one event.
func dedupe(in []*delivery) []*delivery {
	type id struct {
		url, keyFile string
		secret       types.NamespacedName
		key          string
	}
	seen := map[id]bool{}
	out := in[:0]
	for _, d := range in {
		k := id{d.url, d.keyFile, d.secret, d.secretKey}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

// maxChain bounds the scope chain walked (a cycle is the ToolScope controller's to report).
const maxChain = 64

const (
	originDefault = "default"
	originScope   = "scope"
)

func wants(events []v1alpha1.ApprovalEvent, e v1alpha1.ApprovalEvent) bool {
	s := v1alpha1.ApprovalSink{Events: events}
	return s.Wants(e)
}

func eventType(e v1alpha1.ApprovalEvent) string {
	switch e {
	case v1alpha1.ApprovalEventApproved:
		return approvalevents.TypeApproved
	case v1alpha1.ApprovalEventDenied:
		return approvalevents.TypeDenied
	case v1alpha1.ApprovalEventExpired:
		return approvalevents.TypeExpired
	}
	return approvalevents.TypeRequested
}

// Start runs the delivery workers until ctx ends (a manager Runnable: the leader only, as
// the reconcilers that queue). Deliveries still queued then are dropped; a call still
// parked is announced again by the next leader.
func (n *Notifier) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range n.opts.Workers {
		wg.Go(func() {
			for n.work(ctx) {
			}
		})
	}
	<-ctx.Done()
	n.queue.ShutDown()
	wg.Wait()
	return nil
}

// NeedLeaderElection: only the leader delivers.
func (n *Notifier) NeedLeaderElection() bool { return true }

var errPermanent = errors.New("permanent")
