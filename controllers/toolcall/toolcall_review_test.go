package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pipeline"
)

const finishArgs = `{"text":"x"}`

// runningCall is a call admitted with a snapshot of a tool annotated risk=high and the
// label team=red, whose first attempt ran in Job c-1.
func runningCall(t *testing.T, started time.Time) *v1alpha1.ToolCall {
	t.Helper()
	frozen, err := pipeline.Freeze([]byte(finishArgs), pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 1,
			CreationTimestamp: metav1.NewTime(started)},
		Spec: v1alpha1.ToolCallSpec{Tool: "leaky", Requester: "alice",
			Arguments: runtime.RawExtension{Raw: []byte(finishArgs)}},
		Status: v1alpha1.ToolCallStatus{
			Phase:           v1alpha1.PhaseRunning,
			Verdict:         v1alpha1.VerdictAllow,
			ArgumentsDigest: frozen.Digest(),
			CallLabels:      map[string]string{"team": "red"},
			Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "leaky",
				Annotations: map[string]string{"risk": "high"},
				Spec: &v1alpha1.ToolSpec{Timeout: &metav1.Duration{Duration: time.Minute},
					Body: v1alpha1.ToolBody{Image: "example/leaky:1", RunnerInImage: true}}},
			Job:      &v1alpha1.JobReference{Name: "c-1"},
			Attempts: []v1alpha1.Attempt{{Attempt: 1, JobName: "c-1", StartTime: ptrTime(started)}},
		},
	}
}

func postPolicy(name string, rule v1alpha1.PolicyRule) *v1alpha1.ToolPolicy {
	return &v1alpha1.ToolPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       v1alpha1.ToolPolicySpec{Stage: v1alpha1.StagePostExecute, Rules: []v1alpha1.PolicyRule{rule}},
	}
}

// finishFixture is a reconciler whose cache (Client) holds only the call and whose live
// reader (APIReader) holds the policies, optionally failing every LIST.
type finishFixture struct {
	r     *Reconciler
	cache client.Client
	clock *clocktesting.FakeClock
	job   *batchv1.Job
}

func newFinishFixture(t *testing.T, call *v1alpha1.ToolCall, listErr error, policies ...client.Object) *finishFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(call).
		WithStatusSubresource(&v1alpha1.ToolCall{}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(policies...).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if listErr != nil {
				return listErr
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(call.Status.Attempts[0].StartTime.Add(time.Second))
	r := (&Reconciler{Client: cache, APIReader: live, Scheme: scheme,
		Recorder: events.NewFakeRecorder(100), Clock: clock, Compiler: compiler, Options: options.DefaultCall()}).wire()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "c-1", Namespace: "ns"},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
	}
	return &finishFixture{r: r, cache: cache, clock: clock, job: job}
}

// finishSecret is what the body printed: a credential post-execute may have to withhold.
const finishSecret = `{"token":"s3cr3t"}`

// finish runs one finishAttempt pass over the cached call with a body that printed
// finishSecret, and returns the call as stored afterwards.
func (f *finishFixture) finish(t *testing.T) (*v1alpha1.ToolCall, error) {
	t.Helper()
	ctx := context.Background()
	call := &v1alpha1.ToolCall{}
	if err := f.cache.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "c"}, call); err != nil {
		t.Fatal(err)
	}
	o := pipeline.Outcome{Started: true, Report: &pipeline.Report{Stdout: []byte(finishSecret)}, Attempt: 1}
	_, err := f.r.finishAttempt(ctx, call, o)
	stored := &v1alpha1.ToolCall{}
	if gerr := f.cache.Get(ctx, client.ObjectKeyFromObject(call), stored); gerr != nil {
		t.Fatal(gerr)
	}
	return stored, err
}

func resultContent(t *testing.T, call *v1alpha1.ToolCall) any {
	t.Helper()
	if call.Status.Result == nil || call.Status.Result.Content == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(call.Status.Result.Content.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Post-execute sees the tool and call admission saw (from the snapshot), reads the
// policies live, and fails closed when it cannot check the result.
func TestPostExecuteFailsClosed(t *testing.T) {
	withheld := "the tool's result could not be checked by policy and was withheld"
	tests := []struct {
		name     string
		mutate   func(*v1alpha1.ToolCall)
		options  func(*options.Call)
		policies []client.Object
		// want: phase, result reason, content, and the ResultAccepted condition's reason.
		phase     v1alpha1.ToolCallPhase
		reason    string
		content   any
		condition string
		detail    string
	}{
		{name: "accepted unchanged without policies",
			phase: v1alpha1.PhaseSucceeded, reason: "Succeeded", content: map[string]any{"token": "s3cr3t"},
			condition: "ResultAccepted"},
		{name: "a redaction keyed on a tool annotation fires",
			policies: []client.Object{postPolicy("risky", v1alpha1.PolicyRule{Name: "high",
				Expression: `tool.annotations.?risk.orValue("") == "high"`, Action: v1alpha1.ActionRedact})},
			phase: v1alpha1.PhaseSucceeded, reason: "Succeeded", content: "[redacted]", condition: "ResultRedacted"},
		{name: "a block keyed on the call's admitted labels fires after a relabel",
			mutate: func(c *v1alpha1.ToolCall) { c.Labels = map[string]string{"team": "blue"} },
			policies: []client.Object{postPolicy("red", v1alpha1.PolicyRule{Name: "team",
				Expression: `call.labels.?team.orValue("") == "red" && tool.name == "leaky"`,
				Action:     v1alpha1.ActionBlock, Message: "red team results are withheld"})},
			phase: v1alpha1.PhaseFailed, reason: "ResultBlocked", content: "red team results are withheld",
			condition: "ResultBlocked"},
		{name: "arguments that no longer freeze to the admitted digest are not bound as {}",
			mutate: func(c *v1alpha1.ToolCall) { c.Status.ArgumentsDigest = "sha256:" + strings.Repeat("0", 64) },
			policies: []client.Object{postPolicy("args", v1alpha1.PolicyRule{Name: "no-text",
				Expression: `!has(arguments.text)`, Action: v1alpha1.ActionAccept})},
			phase: v1alpha1.PhaseFailed, reason: "PolicyError", content: withheld, condition: "PolicyError",
			detail: "the admitted arguments could not be reproduced"},
		{name: "arguments over today's size limit are withheld",
			options: func(o *options.Call) { o.MaxArgumentBytes = 4 },
			phase:   v1alpha1.PhaseFailed, reason: "PolicyError", content: withheld, condition: "PolicyError",
			detail: "the admitted arguments could not be reproduced"},
		{name: "an output schema that does not compile withholds the result",
			mutate: func(c *v1alpha1.ToolCall) {
				c.Status.Tool.Spec.Output = &runtime.RawExtension{Raw: []byte(`{"type":12}`)}
			},
			phase: v1alpha1.PhaseFailed, reason: "OutputSchemaInvalid",
			content:   "the tool's result could not be checked against its output schema and was withheld",
			condition: "OutputSchemaInvalid", detail: "output schema does not compile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := runningCall(t, time.Now())
			if tc.mutate != nil {
				tc.mutate(call)
			}
			f := newFinishFixture(t, call, nil, tc.policies...)
			if tc.options != nil {
				tc.options(&f.r.Options)
			}
			got, err := f.finish(t)
			if err != nil {
				t.Fatalf("finishAttempt: %v", err)
			}
			if got.Status.Phase != tc.phase || got.Status.Result == nil || got.Status.Result.Reason != tc.reason {
				t.Fatalf("phase %q result %+v, want %s %s; conditions %+v", got.Status.Phase, got.Status.Result, tc.phase, tc.reason, got.Status.Conditions)
			}
			if c := resultContent(t, got); !equalJSON(c, tc.content) {
				t.Errorf("content %v, want %v", c, tc.content)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResultAccepted)
			if cond == nil || cond.Reason != tc.condition || !strings.Contains(cond.Message, tc.detail) {
				t.Errorf("ResultAccepted %+v, want reason %s with %q", cond, tc.condition, tc.detail)
			}
			if tc.reason != "Succeeded" && strings.Contains(got.Status.Result.Error, "s3cr3t") {
				t.Errorf("the withheld content reached the model: %q", got.Status.Result.Error)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Policies that cannot be read are retried, never skipped: the result waits (recorded once
// as ResultAccepted=Unknown) and is withheld as PolicyError at the post-execute deadline.
func TestPostExecuteUnreadablePoliciesRetryThenWithhold(t *testing.T) {
	started := time.Now()
	call := runningCall(t, started)
	f := newFinishFixture(t, call, errors.New("etcdserver: request timed out"))

	got, err := f.finish(t)
	if err == nil || !strings.Contains(err.Error(), "request timed out") {
		t.Fatalf("first pass: err %v, want the read error (retried by the rate limiter)", err)
	}
	if got.Status.Phase != v1alpha1.PhaseRunning || got.Status.Result != nil {
		t.Fatalf("first pass: phase %q result %+v, want Running without a result", got.Status.Phase, got.Status.Result)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResultAccepted)
	if cond == nil || cond.Status != metav1.ConditionUnknown || cond.Reason != v1alpha1.ReasonPolicyUnavailable {
		t.Fatalf("first pass: ResultAccepted %+v, want Unknown PolicyUnavailable", cond)
	}
	ended := got.Status.Attempts[0].CompletionTime
	if ended == nil {
		t.Fatal("first pass: the attempt's end is not recorded; the deadline would move with every pass")
	}

	// Still before the deadline (the attempt's: start + 1m timeout + 30s start allowance +
	// 30s grace).
	f.clock.SetTime(started.Add(110 * time.Second))
	if _, err := f.finish(t); err == nil {
		t.Fatal("second pass before the deadline: want the read error again")
	}

	f.clock.SetTime(started.Add(121 * time.Second))
	got, err = f.finish(t)
	if err != nil {
		t.Fatalf("pass at the deadline: %v", err)
	}
	if got.Status.Phase != v1alpha1.PhaseFailed || got.Status.Result.Reason != "PolicyError" ||
		resultContent(t, got) != "the tool's result could not be checked by policy and was withheld" {
		t.Fatalf("at the deadline: phase %q result %+v, want Failed PolicyError with the generic sentence", got.Status.Phase, got.Status.Result)
	}
	cond = meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResultAccepted)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "PolicyError" || !strings.Contains(cond.Message, "request timed out") {
		t.Errorf("at the deadline: ResultAccepted %+v, want False PolicyError naming the read error", cond)
	}
	if !got.Status.Attempts[0].CompletionTime.Equal(ended) {
		t.Errorf("the attempt's end moved from %v to %v", ended, got.Status.Attempts[0].CompletionTime)
	}
}

// The post-execute deadline is grace after the attempt's end, and never before the
// attempt's own deadline.
func TestPostExecuteDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := (&Reconciler{Clock: clocktesting.NewFakeClock(start), Options: options.DefaultCall()}).wire()
	tests := []struct {
		name  string
		ended time.Duration // after start; 0: not recorded
		want  time.Duration
	}{
		// The attempt's deadline: 1m timeout + 30s start allowance + 30s grace.
		{"end not recorded: the attempt's deadline", 0, 120 * time.Second},
		{"early end: the attempt's deadline", 5 * time.Second, 120 * time.Second},
		{"late end: grace after it", 100 * time.Second, 130 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call := runningCall(t, start)
			if tc.ended > 0 {
				call.Status.Attempts[0].CompletionTime = ptrTime(start.Add(tc.ended))
			}
			if got := r.review.postExecuteDeadline(call); !got.Equal(start.Add(tc.want)) {
				t.Errorf("deadline %v, want start+%v", got.Sub(start), tc.want)
			}
		})
	}
}
