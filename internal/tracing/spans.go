package tracing

import "go.opentelemetry.io/otel/attribute"

// Span names: the root span of a call and one span per pipeline stage. They are the
// operation names in a tracing UI (docs/observability.md, "Tracing").
const (
	// SpanCall is the root span: the call from its creation to its terminal status write.
	SpanCall = "toolcall"
	// SpanResolve is the live read of the registrations and the tool's resolution.
	SpanResolve = "resolve"
	// SpanFreeze .. SpanGuard are the pure stages 1-4 (one admission pass).
	SpanFreeze     = "freeze"
	SpanValidate   = "validate"
	SpanPreExecute = "pre-execute"
	SpanGuard      = "guard"
	// SpanApproval is the wait for a ToolCallApproval: from admission to the decision.
	SpanApproval = "approval"
	// SpanJobStart is an attempt's Job create to its tool container's start.
	SpanJobStart = "job-start"
	// SpanExecute is an attempt's tool container from its start (or the Job create, when
	// the container never started) to the outcome the operator read. Its context is the
	// body's TRACEPARENT.
	SpanExecute = "execute"
	// SpanPostExecute .. SpanFreezeResult are stages 6-8 of the final pass.
	SpanPostExecute  = "post-execute"
	SpanNormalize    = "normalise"
	SpanFreezeResult = "freeze-result"
)

// Attribute keys. Spans carry the call's identity and decisions, never argument or
// result content.
const (
	AttrCall      = attribute.Key("toolgate.call")
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrCallUID   = attribute.Key("toolgate.call.uid")
	AttrTool      = attribute.Key("toolgate.tool")
	AttrVerdict   = attribute.Key("toolgate.verdict")
	AttrReason    = attribute.Key("toolgate.reason")
	AttrPhase     = attribute.Key("toolgate.phase")
	AttrAttempt   = attribute.Key("toolgate.attempt")
	AttrAttempts  = attribute.Key("toolgate.attempts")
	AttrJob       = attribute.Key("k8s.job.name")
	AttrSession   = attribute.Key("toolgate.session")
)
