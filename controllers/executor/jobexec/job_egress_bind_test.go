package jobexec

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pkg/egress"
)

// fakeBindings is the proxy's binding endpoint: it records each authorised request
// ("path ip") and answers status.
type fakeBindings struct {
	mu     sync.Mutex
	got    []string
	status int
}

func (f *fakeBindings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body struct {
		IP string `json:"ip"`
	}
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer "+egress.RecordsToken(egressgranttest.Key) ||
		json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.got = append(f.got, r.URL.Path+" "+body.IP)
	w.WriteHeader(f.status)
}

func (f *fakeBindings) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func runningPod(uid, ip string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello-1-abc", UID: types.UID(uid)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// The running attempt's Pod is bound to the attempt's grant once: the proxy is told its
// address with the records token; a failure is retried on a later reconcile and reported
// by one Warning event per Pod.
func TestBindEgress(t *testing.T) {
	proxy := &fakeBindings{status: http.StatusServiceUnavailable}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	rec := events.NewFakeRecorder(10)
	opts := options.DefaultCall()
	opts.EgressProxy = egressTestOptions()
	opts.EgressProxy.RecordsURL = srv.URL
	j := New(executortest.WithFeatures(execenv.Env{Clock: clocktesting.NewFakePassiveClock(time.Unix(1_000_010, 0)), Options: opts, Recorder: rec}))
	// bindEgress: the features asked to be told of the running Pod again (the binding).
	bindEgress := func(ctx context.Context, call *toolgatev1alpha1.ToolCall, pod *corev1.Pod) bool {
		return j.featuresRunning(ctx, call, pod) > 0
	}
	call := injectCall(egressgranttest.WithEgress)
	ctx := context.Background()
	pod := runningPod("pod-1", "10.244.0.7")
	want := "/records/call-uid/1/pod 10.244.0.7"

	for i := range 2 {
		if !bindEgress(ctx, call, pod) {
			t.Fatalf("try %d: a binding the proxy refused is not retried", i+1)
		}
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d events after two failures, want one", len(rec.Events))
	}
	if e := <-rec.Events; !strings.Contains(e, egressgrant.EventBindFailed) || !strings.Contains(e, "hello-1-abc") || !strings.Contains(e, "status 503") {
		t.Errorf("event %q", e)
	}
	proxy.mu.Lock()
	proxy.status = http.StatusNoContent
	proxy.mu.Unlock()
	if bindEgress(ctx, call, pod) {
		t.Error("an accepted binding is retried")
	}
	if bindEgress(ctx, call, pod) {
		t.Error("a bound Pod is bound again")
	}
	if got := proxy.requests(); len(got) != 3 || got[2] != want {
		t.Errorf("requests %q: want two refused and one accepted, the last %q", got, want)
	}

	for name, c := range map[string]struct {
		call *toolgatev1alpha1.ToolCall
		pod  *corev1.Pod
	}{
		"no Pod":                 {call, nil},
		"no address yet":         {call, runningPod("pod-2", "")},
		"an ended Pod":           {call, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "pod-3"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded, PodIP: "10.244.0.8"}}},
		"a tool without a proxy": {injectCall(nil), runningPod("pod-4", "10.244.0.9")},
	} {
		if bindEgress(ctx, c.call, c.pod) {
			t.Errorf("%s: retry asked", name)
		}
	}
	if got := proxy.requests(); len(got) != 3 {
		t.Errorf("requests %q: want none for Pods that need no binding", got)
	}
}
