package notify

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/approvalevents"
)

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/x?y=1":         true,
		"https://10.1.2.3:8443/":                  true,
		"http://bot.ops.svc/":                     true,
		"http://bot.ops.svc.cluster.local:80/e":   true,
		"http://hooks.example.com/":               false,
		"http://10.0.0.1/":                        false,
		"http://svc/":                             false,
		"ftp://bot.ops.svc/":                      false,
		"https:///nohost":                         false,
		"/relative":                               false,
		"http://bot.ops.svc.evil.example.com/":    false,
		"https://[::1]:9443/":                     true,
		"http://bot.ops.svc.cluster.local.evil/x": false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}

// newTestNotifier returns a notifier whose only sink is scope "team"'s, at url, with its
// Secret (of the sink key type) in namespace ns; it may dial loopback, where the tests'
// servers are, and trusts srv's certificate.
func newTestNotifier(t *testing.T, url string, srv *httptest.Server) *Notifier {
	t.Helper()
	return newNotifierWith(t, url, srv, AddressPolicy{Allow: mustPrefixes("127.0.0.0/8")},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "k", Namespace: "ns"}, Type: v1alpha1.SecretTypeApprovalSinkKey,
			Data: map[string][]byte{"hmac-key": []byte("key")}})
}

// newNotifierWith is newTestNotifier with its own address policy and sink Secret.
func newNotifierWith(t *testing.T, url string, srv *httptest.Server, policy AddressPolicy, secret *corev1.Secret) *Notifier {
	t.Helper()
	opts := Options{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Timeout: 2 * time.Second, Addresses: policy}
	if srv != nil {
		opts.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	return newNotifierOpts(t, url, opts, secret)
}

// newNotifierOpts is a notifier with opts whose only sink is scope "team"'s, at url.
func newNotifierOpts(t *testing.T, url string, opts Options, secret *corev1.Secret) *Notifier {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{
			ApprovalSinks: []v1alpha1.ApprovalSink{{Name: "s", URL: url, SecretRef: v1alpha1.SecretKeySelector{Name: "k"}}}}},
		secret,
	).Build()
	return New(opts, c, c, &notes{})
}

// notes records the events a notifier emits.
type notes struct {
	mu  sync.Mutex
	got []note
}

type note struct {
	regarding, related  string
	typ, reason, action string
	text                string
}

func (r *notes) Eventf(regarding, related runtime.Object, eventtype, reason, action, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := note{typ: eventtype, reason: reason, action: action, text: fmt.Sprintf(format, args...)}
	if o, ok := regarding.(metav1.Object); ok {
		n.regarding = o.GetNamespace() + "/" + o.GetName()
	}
	if ref, ok := related.(*corev1.ObjectReference); ok {
		n.related = ref.Kind + " " + ref.Namespace + "/" + ref.Name + " " + ref.FieldPath
	}
	r.got = append(r.got, n)
}

func (r *notes) AnnotatedEventf(regarding, related runtime.Object, _ map[string]string, eventtype, reason, action, format string, args ...any) {
	r.Eventf(regarding, related, eventtype, reason, action, format, args...)
}

func (r *notes) list() []note {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]note(nil), r.got...)
}

func notesOf(n *Notifier) []note { return n.rec.(*notes).list() }

func event() Event {
	return Event{Kind: v1alpha1.ApprovalEventRequested, Scope: "team", At: time.Now(),
		Data: approvalevents.Data{Namespace: "ns", Name: "c", UID: "u"}}
}

// drain works the queue until it is empty, at most limit items.
func drain(ctx context.Context, n *Notifier, limit int) {
	for done := 0; done < limit && n.pending.Load() > 0; done++ {
		n.work(ctx)
	}
}

func TestDeliveryAnswers(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []int
		wantCalls int
	}{
		{"accepted at once", []int{http.StatusNoContent}, 1},
		{"unavailable, then accepted", []int{503, 503, 200}, 3},
		{"rate limited, then accepted", []int{429, 202}, 2},
		{"down: given up after the attempts", []int{500, 500, 500, 500}, 3},
		{"refused: not retried", []int{400}, 1},
		{"unauthorised: not retried", []int{401}, 1},
		{"a redirect is not followed", []int{http.StatusFound}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			var followed atomic.Bool
			other := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
			defer other.Close()
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(calls.Add(1)) - 1
				if _, err := (approvalevents.Verifier{Keys: [][]byte{[]byte("key")}}).Request(r); err != nil {
					t.Errorf("request does not verify: %v", err)
				}
				code := tc.statuses[min(i, len(tc.statuses)-1)]
				if code == http.StatusFound {
					w.Header().Set("Location", other.URL)
				}
				w.WriteHeader(code)
			}))
			defer srv.Close()
			n := newTestNotifier(t, srv.URL, srv)
			n.Notify(context.Background(), event())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			drain(ctx, n, 10)
			if got := int(calls.Load()); got != tc.wantCalls {
				t.Errorf("the sink got %d requests, want %d", got, tc.wantCalls)
			}
			if followed.Load() {
				t.Error("a redirect was followed")
			}
			if n.pending.Load() != 0 {
				t.Errorf("%d deliveries still pending", n.pending.Load())
			}
		})
	}
}

func TestNotifyDropsPastMaxPending(t *testing.T) {
	n := newTestNotifier(t, "https://127.0.0.1:1/", nil)
	n.opts.MaxPending = 2
	for range 5 {
		n.Notify(context.Background(), event())
	}
	if got := n.queue.Len(); got != 2 {
		t.Fatalf("queued %d, want 2", got)
	}
}

func TestFirstRequest(t *testing.T) {
	n := newTestNotifier(t, "https://127.0.0.1:1/", nil)
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	first := n.FirstRequest(key, "u1")
	again := n.FirstRequest(key, "u1")
	recreated := n.FirstRequest(key, "u2")
	n.Forget(key)
	afterForget := n.FirstRequest(key, "u2")
	if !first || again || !recreated || !afterForget {
		t.Fatalf("first %v again %v recreated %v afterForget %v", first, again, recreated, afterForget)
	}
}

func TestSinksOfTheScopeChain(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	sink := func(name, url string, events ...v1alpha1.ApprovalEvent) v1alpha1.ApprovalSink {
		return v1alpha1.ApprovalSink{Name: name, URL: url, SecretRef: v1alpha1.SecretKeySelector{Name: "k", Key: "hmac-key"}, Events: events}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{
			ApprovalSinks: []v1alpha1.ApprovalSink{sink("shared", "https://a.example/"), sink("late", "https://c.example/", v1alpha1.ApprovalEventExpired)}}},
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "mid", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{Parent: "root",
			ApprovalSinks: []v1alpha1.ApprovalSink{sink("own", "https://b.example/"), sink("again", "https://a.example/")}}},
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "leaf", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{Parent: "mid"}},
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "loop-a", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{Parent: "loop-b",
			ApprovalSinks: []v1alpha1.ApprovalSink{sink("x", "https://x.example/")}}},
		&v1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "loop-b", Namespace: "ns"}, Spec: v1alpha1.ToolScopeSpec{Parent: "loop-a"}},
	).Build()
	n := New(Options{Default: &DefaultSink{URL: "https://default.example/", KeyFile: "/k", Events: []v1alpha1.ApprovalEvent{v1alpha1.ApprovalEventRequested}}}, c, c, nil)
	names := func(scope string, kind v1alpha1.ApprovalEvent) []string {
		ev := event()
		ev.Scope, ev.Kind = scope, kind
		var out []string
		for _, d := range n.sinks(context.Background(), ev) {
			out = append(out, d.name)
		}
		return out
	}
	for _, tc := range []struct {
		scope string
		kind  v1alpha1.ApprovalEvent
		want  []string
	}{
		{"leaf", v1alpha1.ApprovalEventRequested, []string{"default", "mid/own", "mid/again"}},
		{"leaf", v1alpha1.ApprovalEventExpired, []string{"mid/own", "mid/again", "root/late"}},
		{"root", v1alpha1.ApprovalEventApproved, []string{"root/shared"}},
		{"", v1alpha1.ApprovalEventRequested, []string{"default"}},
		{"missing", v1alpha1.ApprovalEventDenied, nil},
		{"loop-a", v1alpha1.ApprovalEventDenied, []string{"loop-a/x"}},
	} {
		if diff := cmp.Diff(tc.want, names(tc.scope, tc.kind)); diff != "" {
			t.Errorf("sinks of %s for %s (-want +got):\n%s", tc.scope, tc.kind, diff)
		}
	}
}
