package toolcall

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// AuditLoggerName is the name of the logger the audit records go to ("logger":"audit" in
// the operator's JSON log), so that a log pipeline can keep them apart.
const AuditLoggerName = "audit"

// AuditMessage is the message of the audit record written with a call's terminal status:
// at most once (lost only if the process dies between the write's answer and the log line).
const AuditMessage = "toolcall finished"

// AuditReleasedMessage is the message of the record written when the operator lets a
// deleted call go (FinalizerRecord): at least once, so every call's end is in the audit log
// by the time the call is gone, whatever happened to its "toolcall finished" record.
const AuditReleasedMessage = "toolcall released"

// auditStage is one pipeline condition of the record: its status and reason.
type auditStage struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// auditAttempt is one attempt of the record.
type auditAttempt struct {
	Attempt     int32   `json:"attempt"`
	Job         string  `json:"job,omitempty"`
	Reason      string  `json:"reason,omitempty"`
	StartedAt   string  `json:"startedAt,omitempty"`
	CompletedAt string  `json:"completedAt,omitempty"`
	Seconds     float64 `json:"durationSeconds,omitempty"`
}

// auditValues are the key-values of a call's audit record (docs/retention.md lists them).
// Content (arguments, result content and error message, condition messages, which may quote
// arguments) is left out unless includeContent.
func auditValues(call *v1alpha1.ToolCall, includeContent, recovered bool) []any {
	st := call.Status
	kv := []any{
		"namespace", call.Namespace, "name", call.Name, "uid", string(call.UID),
		"tool", call.Spec.Tool, "scope", call.Spec.Scope, "session", call.Spec.Session,
		"requester", call.Spec.Requester, "approver", st.Approver,
		"phase", string(st.Phase), "verdict", string(st.Verdict),
		"argumentsDigest", st.ArgumentsDigest, "resultDigest", st.ResultDigest,
		"stages", auditStages(st.Conditions), "attempts", auditAttempts(st.Attempts),
		"createdAt", stamp(&call.CreationTimestamp), "admittedAt", stamp(st.AdmittedTime),
		"startedAt", stamp(st.StartTime), "completedAt", stamp(st.CompletionTime), "expiresAt", stamp(st.ExpiresAt),
		"durationSeconds", seconds(&call.CreationTimestamp, st.CompletionTime),
	}
	if snap := st.Tool; snap != nil {
		kv = append(kv, "toolKind", string(snap.Kind), "toolObject", snap.Name, "toolSpecDigest", snap.SpecDigest)
	}
	if res := st.Result; res != nil {
		kv = append(kv, "reason", res.Reason, "isError", res.IsError, "resultBytes", contentBytes(res))
		if includeContent {
			kv = append(kv, "resultContent", rawJSON(res.Content), "resultError", res.Error)
		}
	}
	if includeContent {
		kv = append(kv, "arguments", json.RawMessage(call.Spec.Arguments.Raw))
	}
	if recovered {
		kv = append(kv, "recovered", true)
	}
	return kv
}

func auditStages(conds []metav1.Condition) map[string]auditStage {
	out := make(map[string]auditStage, len(conds))
	for _, c := range conds {
		out[c.Type] = auditStage{Status: string(c.Status), Reason: c.Reason}
	}
	return out
}

func auditAttempts(attempts []v1alpha1.Attempt) []auditAttempt {
	out := make([]auditAttempt, 0, len(attempts))
	for _, a := range attempts {
		out = append(out, auditAttempt{Attempt: a.Attempt, Job: a.JobName, Reason: a.Reason,
			StartedAt: stamp(a.StartTime), CompletedAt: stamp(a.CompletionTime), Seconds: seconds(a.StartTime, a.CompletionTime)})
	}
	return out
}

func stamp(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func seconds(from, to *metav1.Time) float64 {
	if from == nil || to == nil || from.IsZero() || to.IsZero() {
		return 0
	}
	return to.Sub(from.Time).Seconds()
}

func contentBytes(res *v1alpha1.ToolResult) int {
	if res.Content == nil {
		return 0
	}
	return len(res.Content.Raw)
}

func rawJSON(c *apiextensionsv1.JSON) json.RawMessage {
	if c == nil || len(c.Raw) == 0 {
		return nil
	}
	return c.Raw
}

// auditLogger is the reconciler's audit logger: Options' if set, else the process logger's
// "audit" child.
func (a *auditWriter) auditLogger() logr.Logger {
	r := a.r
	if r.Audit.GetSink() != nil {
		return r.Audit
	}
	return ctrl.Log.WithName(AuditLoggerName)
}

// emitAudit logs the audit record of a call whose terminal status was just written (or,
// recovered, found written after a write whose answer was lost).
func (a *auditWriter) emitAudit(_ context.Context, call *v1alpha1.ToolCall, recovered bool) {
	r := a.r
	a.auditLogger().Info(AuditMessage, auditValues(call, r.Options.Retention.AuditIncludeContent, recovered)...)
}

// emitReleased logs the record of a terminal call the operator is about to let go.
func (a *auditWriter) emitReleased(call *v1alpha1.ToolCall) {
	a.auditLogger().Info(AuditReleasedMessage, auditValues(call, false, false)...)
}

// auditRecovered emits the record of a terminal call whose terminal write this process
// made but got no answer to (a timeout, a dropped connection: it may have been applied),
// once the cache shows it was: the same result digest as the write held.
func (a *auditWriter) auditRecovered(ctx context.Context, cached *v1alpha1.ToolCall) {
	held := a.pending.take(cached)
	if held != nil && held.Status.ResultDigest == cached.Status.ResultDigest {
		a.emitAudit(ctx, held, true)
	}
}

// pendingAudits are the terminal writes whose outcome is unknown, by call.
type pendingAudits struct {
	mu    sync.Mutex
	calls map[types.NamespacedName]*v1alpha1.ToolCall
}

func (p *pendingAudits) hold(call *v1alpha1.ToolCall) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[types.NamespacedName]*v1alpha1.ToolCall{}
	}
	p.calls[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}] = call.DeepCopy()
}

// take returns and forgets the held write of call (the same uid), if any.
func (p *pendingAudits) take(call *v1alpha1.ToolCall) *v1alpha1.ToolCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Name}
	held, ok := p.calls[key]
	if !ok {
		return nil
	}
	delete(p.calls, key)
	if held.UID != call.UID {
		return nil
	}
	return held
}

func (p *pendingAudits) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.calls, key)
}
