package toolcall

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// finishedCall is a Succeeded call with every field the cache transform is about.
func finishedCall(name string, completed time.Time) *v1alpha1.ToolCall {
	call := unitCall(name, "echo")
	call.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`, "team": "a"}
	call.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "toolgate.dev/v1alpha1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1("{}")}}
	call.CreationTimestamp = metav1.NewTime(completed.Add(-2 * time.Second))
	call.Status = v1alpha1.ToolCallStatus{
		Phase: v1alpha1.PhaseSucceeded, Verdict: v1alpha1.VerdictAllow,
		ArgumentsDigest: "sha256:" + strings.Repeat("a", 64), ResultDigest: "sha256:" + strings.Repeat("b", 64),
		Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "echo", SpecDigest: "sha256:" + strings.Repeat("c", 64),
			Spec: &v1alpha1.ToolSpec{Description: "echo"}, Annotations: map[string]string{"x": "y"}},
		CallLabels:     map[string]string{"l": "v"},
		Conditions:     []metav1.Condition{{Type: v1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "m"}},
		Attempts:       []v1alpha1.Attempt{{Attempt: 1, JobName: name + "-1", StartTime: ptrTime(completed.Add(-time.Second)), CompletionTime: ptrTime(completed)}},
		CompletionTime: ptrTime(completed),
		ExpiresAt:      ptrTime(completed.Add(time.Hour)),
		Result: &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Meta: map[string]string{"attempt": "1"},
			Content: &apiextensionsv1.JSON{Raw: []byte(`{"secret":"result text"}`)}},
	}
	return call
}

// The transform drops from a terminal call what the reconcilers never read again, keeps
// what they do, and strips only managedFields and last-applied from a live call.
func TestTransformToolCall(t *testing.T) {
	now := time.Now()
	got, err := TransformToolCall(finishedCall("c", now))
	if err != nil {
		t.Fatal(err)
	}
	want := finishedCall("c", now)
	want.ManagedFields = nil
	want.Annotations = map[string]string{"team": "a"}
	want.Spec.Arguments.Raw = nil
	want.Status.Result.Content = nil
	want.Status.Tool.Spec, want.Status.Tool.Annotations = nil, nil
	want.Status.CallLabels = nil
	want.Status.Conditions[0].Message = ""
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("terminal call (-want +got):\n%s", diff)
	}

	running := finishedCall("r", now)
	running.Status.Phase, running.Status.Result, running.Status.ResultDigest = v1alpha1.PhaseRunning, nil, ""
	wantRunning := running.DeepCopy()
	wantRunning.ManagedFields = nil
	wantRunning.Annotations = map[string]string{"team": "a"}
	got, err = TransformToolCall(running)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantRunning, got); diff != "" {
		t.Errorf("running call (-want +got):\n%s", diff)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	if out, _ := TransformToolCall(pod); out.(*corev1.Pod).ManagedFields != nil {
		t.Error("another kind keeps its managedFields")
	}
}

// The TTL that applies: the call's (raised to the operator's floor), else its tool
// snapshot's, else the operator's; none when the operator's default is 0 and neither sets
// one. 0 on the tool is a TTL; 0 on the call is the floor. The floor bounds the caller's own
// value only: the tool's and the operator's are the platform's. The ceiling bounds every
// value an object sets, the call's and the tool's (the operator's is checked against it when
// the manager reads its flags).
func TestEffectiveTTLPrecedence(t *testing.T) {
	const forever = int32(2147483647) // 2094, when the call finished now
	tests := []struct {
		name                     string
		call, tool               *int32
		operator, floor, ceiling time.Duration
		want                     time.Duration
		wantOK                   bool
	}{
		{name: "call wins", call: ptr.To[int32](5), tool: ptr.To[int32](10), operator: time.Minute, want: 5 * time.Second, wantOK: true},
		{name: "tool over operator", tool: ptr.To[int32](10), operator: time.Minute, want: 10 * time.Second, wantOK: true},
		{name: "operator default", operator: time.Minute, want: time.Minute, wantOK: true},
		{name: "operator 0 keeps", operator: 0, wantOK: false},
		{name: "call 0 without a floor is at once", call: ptr.To[int32](0), operator: time.Minute, want: 0, wantOK: true},
		{name: "tool 0 is at once", tool: ptr.To[int32](0), want: 0, wantOK: true},
		{name: "call 0 is raised to the floor", call: ptr.To[int32](0), floor: 5 * time.Minute, want: 5 * time.Minute, wantOK: true},
		{name: "call under the floor is raised", call: ptr.To[int32](60), tool: ptr.To[int32](3600), floor: 5 * time.Minute, want: 5 * time.Minute, wantOK: true},
		{name: "call over the floor lengthens", call: ptr.To[int32](7200), floor: 5 * time.Minute, operator: time.Minute, want: 2 * time.Hour, wantOK: true},
		{name: "the floor leaves the tool's value", tool: ptr.To[int32](0), floor: 5 * time.Minute, want: 0, wantOK: true},
		{name: "the floor leaves the operator's value", operator: time.Minute, floor: 5 * time.Minute, want: time.Minute, wantOK: true},
		{name: "the call's int32 maximum is lowered to the ceiling", call: ptr.To(forever), floor: 5 * time.Minute, ceiling: options.DefaultMaxTTL, want: options.DefaultMaxTTL, wantOK: true},
		{name: "the call over the ceiling wins over the tool, lowered", call: ptr.To[int32](7200), tool: ptr.To[int32](60), ceiling: time.Hour, want: time.Hour, wantOK: true},
		{name: "the tool's value is lowered to the ceiling", tool: ptr.To(forever), operator: time.Minute, ceiling: options.DefaultMaxTTL, want: options.DefaultMaxTTL, wantOK: true},
		{name: "a ceiling equal to the floor", call: ptr.To[int32](0), floor: time.Hour, ceiling: time.Hour, want: time.Hour, wantOK: true},
		{name: "under the ceiling as asked", call: ptr.To[int32](600), floor: 5 * time.Minute, ceiling: time.Hour, want: 10 * time.Minute, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := (&Reconciler{Options: options.DefaultCall()}).wire()
			r.Options.Retention.TTL, r.Options.Retention.MinTTL, r.Options.Retention.MaxTTL = tc.operator, tc.floor, tc.ceiling
			call := finishedCall("c", time.Now())
			call.Spec.TTLSecondsAfterFinished = tc.call
			call.Status.Tool.Spec.CallTTLSecondsAfterFinished = tc.tool
			got, ok := r.retention.effectiveTTL(call)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("effectiveTTL = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
			r.retention.setExpiry(call, call.Status.CompletionTime.Time)
			if (call.Status.ExpiresAt != nil) != tc.wantOK {
				t.Errorf("expiresAt %v, want set %v", call.Status.ExpiresAt, tc.wantOK)
			}
		})
	}
}

// A terminal call is requeued for its expiry, then deleted (uid precondition, background
// propagation); an approval bound to it without an ownerReference goes with it, one with
// the reference is left to the garbage collector.
func TestExpireRequeuesThenDeletes(t *testing.T) {
	now := time.Now()
	call := finishedCall("c", now)
	call.Status.ExpiresAt = ptrTime(now.Add(time.Minute))
	unowned := &v1alpha1.ToolCallApproval{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "a1"},
		Spec: v1alpha1.ToolCallApprovalSpec{CallUID: string(call.UID), Decision: v1alpha1.DecisionApprove, Approver: "bob"}}
	var deletes []string
	var propagation metav1.DeletionPropagation
	funcs := interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		do := (&client.DeleteOptions{}).ApplyOptions(opts)
		if do.Preconditions == nil || do.Preconditions.UID == nil || *do.Preconditions.UID != obj.GetUID() {
			t.Errorf("delete of %T %s without its uid precondition", obj, obj.GetName())
		}
		if _, ok := obj.(*v1alpha1.ToolCall); ok && do.PropagationPolicy != nil {
			propagation = *do.PropagationPolicy
		}
		deletes = append(deletes, typeName(obj)+"/"+obj.GetName())
		return c.Delete(ctx, obj, opts...)
	}}
	r, c := unitReconciler(t, funcs, call, unowned)
	clock := clocktesting.NewFakeClock(now)
	r.Clock = clock
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}}
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Fatalf("before expiry: %+v, %v; want a requeue within a minute", res, err)
	}
	if len(deletes) != 0 {
		t.Fatalf("deleted %v before the expiry", deletes)
	}
	clock.Step(time.Minute)
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ToolCallApproval/c", "ToolCall/c"}, deletes); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	if propagation != metav1.DeletePropagationBackground {
		t.Errorf("propagation %q, want Background", propagation)
	}
	if err := c.Get(context.Background(), req.NamespacedName, &v1alpha1.ToolCall{}); !apierrors.IsNotFound(err) {
		t.Errorf("the call is still there: %v", err)
	}
}

// An owned approval is the garbage collector's; a call finished without expiresAt uses its
// own TTL or the operator's default from its completion time.
func TestExpireLeavesOwnedApprovalAndUsesCompletionTime(t *testing.T) {
	now := time.Now()
	call := finishedCall("c", now.Add(-2*time.Hour))
	call.Status.ExpiresAt = nil
	owned := &v1alpha1.ToolCallApproval{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "a1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall", Name: "c", UID: call.UID}}},
		Spec: v1alpha1.ToolCallApprovalSpec{CallUID: string(call.UID), Decision: v1alpha1.DecisionApprove, Approver: "bob"}}
	r, c := unitReconciler(t, interceptor.Funcs{}, call, owned)
	r.Clock = clocktesting.NewFakeClock(now)
	r.Options.Retention.TTL = 3 * time.Hour
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "c"}}
	res, err := r.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter < 59*time.Minute || res.RequeueAfter > time.Hour {
		t.Fatalf("%+v, %v; want a requeue in about an hour (completion + 3h default)", res, err)
	}
	r.Options.Retention.TTL = time.Hour
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, &v1alpha1.ToolCall{}); !apierrors.IsNotFound(err) {
		t.Errorf("the call is still there: %v", err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, &v1alpha1.ToolCallApproval{}); err != nil {
		t.Errorf("the owned approval was deleted by the operator (the garbage collector's job): %v", err)
	}
}

// A call that ended with an expiry past the ceiling (under an operator without one, or
// with a higher one) is due at its completion time plus the ceiling; one within it keeps
// its recorded expiry.
func TestExpiresAtHonoursTheCeiling(t *testing.T) {
	done := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		recorded time.Time
		ceiling  time.Duration
		want     time.Time
	}{
		{name: "2094 is lowered to the ceiling", recorded: time.Date(2094, 12, 19, 0, 0, 0, 0, time.UTC), ceiling: options.DefaultMaxTTL, want: done.Add(options.DefaultMaxTTL)},
		{name: "within the ceiling as recorded", recorded: done.Add(time.Hour), ceiling: options.DefaultMaxTTL, want: done.Add(time.Hour)},
		{name: "at the ceiling as recorded", recorded: done.Add(time.Hour), ceiling: time.Hour, want: done.Add(time.Hour)},
		{name: "no ceiling (options built without one)", recorded: done.Add(30 * 24 * time.Hour), want: done.Add(30 * 24 * time.Hour)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := (&Reconciler{Options: options.DefaultCall()}).wire()
			r.Options.Retention.MaxTTL = tc.ceiling
			call := finishedCall("c", done)
			call.Status.ExpiresAt = ptrTime(tc.recorded)
			got, ok := r.retention.expiresAt(call)
			if !ok || !got.Equal(tc.want) {
				t.Errorf("expiresAt = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}

// The audit record is one JSON line on the "audit" logger with the call's identity, stages,
// digests and attempts; the content appears only with AuditIncludeContent.
func TestAuditRecord(t *testing.T) {
	for _, include := range []bool{false, true} {
		var buf bytes.Buffer
		r := (&Reconciler{Options: options.DefaultCall(),
			Audit: crzap.New(crzap.WriteTo(&buf), crzap.UseDevMode(false)).WithName(AuditLoggerName)}).wire()
		r.Options.Retention.AuditIncludeContent = include
		call := finishedCall("c", time.Now())
		call.Status.Approver = "bob"
		r.audit.emitAudit(context.Background(), call, false)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 1 {
			t.Fatalf("%d lines, want one record: %s", len(lines), buf.String())
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
			t.Fatalf("not JSON: %v: %s", err, lines[0])
		}
		for key, want := range map[string]any{"logger": "audit", "msg": AuditMessage, "namespace": "ns", "name": "c", "uid": "uid-c",
			"tool": "echo", "requester": "alice", "approver": "bob", "phase": "Succeeded", "verdict": "Allow", "reason": "Succeeded",
			"argumentsDigest": call.Status.ArgumentsDigest, "resultDigest": call.Status.ResultDigest, "toolKind": "Tool",
			"toolSpecDigest": call.Status.Tool.SpecDigest, "isError": false, "resultBytes": float64(len(call.Status.Result.Content.Raw)),
			"durationSeconds": 2.0, "expiresAt": call.Status.ExpiresAt.UTC().Format(time.RFC3339Nano)} {
			if diff := cmp.Diff(want, rec[key]); diff != "" {
				t.Errorf("include=%v %s (-want +got):\n%s", include, key, diff)
			}
		}
		stages, _ := rec["stages"].(map[string]any)
		if diff := cmp.Diff(map[string]any{"status": "True", "reason": "Succeeded"}, stages[v1alpha1.ConditionCompleted]); diff != "" {
			t.Errorf("stages: %s", diff)
		}
		if attempts, _ := rec["attempts"].([]any); len(attempts) != 1 {
			t.Errorf("attempts %v, want one", rec["attempts"])
		}
		hasContent := strings.Contains(lines[0], "result text") || strings.Contains(lines[0], `"text":"x"`)
		if hasContent != include {
			t.Errorf("include=%v but content in the record: %v: %s", include, hasContent, lines[0])
		}
	}
}

// A terminal write whose answer was lost (not a conflict) is audited once the cache shows
// it landed with the same result; a conflict is never audited.
func TestAuditRecoveredAfterAnAmbiguousWrite(t *testing.T) {
	var buf bytes.Buffer
	r := (&Reconciler{Audit: crzap.New(crzap.WriteTo(&buf)).WithName(AuditLoggerName)}).wire()
	call := finishedCall("c", time.Now())
	r.audit.pending.hold(call)
	other := call.DeepCopy()
	other.UID = "another"
	r.audit.auditRecovered(context.Background(), other)
	if buf.Len() != 0 {
		t.Fatalf("audited a recreated call of the same name: %s", buf.String())
	}
	r.audit.pending.hold(call)
	r.audit.auditRecovered(context.Background(), call)
	r.audit.auditRecovered(context.Background(), call)
	if n := strings.Count(buf.String(), AuditMessage); n != 1 {
		t.Fatalf("%d records, want exactly one: %s", n, buf.String())
	}
	if !strings.Contains(buf.String(), `"recovered":true`) {
		t.Errorf("the record does not say it was recovered: %s", buf.String())
	}
}

func typeName(o client.Object) string {
	switch o.(type) {
	case *v1alpha1.ToolCall:
		return "ToolCall"
	case *v1alpha1.ToolCallApproval:
		return "ToolCallApproval"
	}
	return "?"
}

// The cached Job keeps nothing of its template (the arguments above all; it holds no key);
// the cached Pod keeps no spec.
func TestTransformJobAndPod(t *testing.T) {
	call := finishedCall("c", time.Now())
	call.Status.Tool.Spec = &v1alpha1.ToolSpec{Body: v1alpha1.ToolBody{Image: "example/echo:1"}}
	job := podspec.BuildJob(podspec.Input{Call: call, Tool: call.Status.Tool.Spec, Arguments: []byte(`{"text":"` + strings.Repeat("a", 4096) + `"}`),
		Digest: call.Status.ArgumentsDigest, Attempt: 1}, podspec.DefaultOptions())
	out, err := TransformJob(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*batchv1.Job)
	if raw, _ := json.Marshal(trimmed.Spec.Template); strings.Contains(string(raw), "aaaa") || len(raw) > 64 {
		t.Errorf("the cached template keeps %d bytes: %s", len(raw), raw)
	}
	if trimmed.Annotations[podcontract.AnnotationCallName] != "c" || trimmed.Labels[podcontract.LabelManagedBy] != podcontract.ManagedByValue {
		t.Errorf("the Job's metadata was trimmed: %v %v", trimmed.Labels, trimmed.Annotations)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{podcontract.AnnotationCallName: "c"}},
		Spec:   job.Spec.Template.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: podcontract.ToolContainerName}}}}
	out, _ = TransformPod(pod)
	if p := out.(*corev1.Pod); len(p.Spec.Containers) != 0 || podspec.ToolContainerStatus(p) == nil || p.Annotations[podcontract.AnnotationCallName] != "c" {
		t.Errorf("cached Pod: spec %d containers, status %v, annotations %v", len(p.Spec.Containers), p.Status, p.Annotations)
	}
}
