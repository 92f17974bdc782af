package catalog

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// This file is the one mapping from API objects to the pipeline's own input types (data
// flows one way: API object → pipeline input → verdicts → status). The operator, the
// approval console and the clients all convert here, so that a policy, a retry policy or
// a call's CEL input means the same to each of them.

// PolicySpec is a ToolPolicy as the pipeline compiles it.
func PolicySpec(p *v1alpha1.ToolPolicy) pipeline.PolicySpec {
	spec := pipeline.PolicySpec{
		Name:  p.Name,
		Stage: pipeline.Stage(p.Spec.Stage),
		Order: int(p.Spec.Order),
		Tools: p.Spec.Tools,
	}
	if p.Spec.ApprovalWindow != nil {
		spec.ApprovalWindow = p.Spec.ApprovalWindow.Duration
	}
	for _, r := range p.Spec.Rules {
		spec.Rules = append(spec.Rules, pipeline.Rule{
			Name:       r.Name,
			Expression: r.Expression,
			Verdict:    pipeline.Verdict(r.Verdict),
			Action:     pipeline.Action(r.Action),
			Replace:    r.Replace,
			Message:    r.Message,
		})
	}
	return spec
}

// RetryPolicy is a tool's spec.retry as the pipeline decides retries with it.
func RetryPolicy(spec *v1alpha1.ToolSpec) pipeline.RetryPolicy {
	p := pipeline.RetryPolicy{MaxAttempts: int(spec.Retry.MaxAttempts)}
	for _, r := range spec.Retry.OnReasons {
		p.OnReasons = append(p.OnReasons, pipeline.Reason(r))
	}
	return p
}

// Snapshot is what a call keeps of the tool it resolved to (status.tool), found through
// the index's registration (its spec digest): the tool as resolved, whatever happens to
// the object afterwards.
func Snapshot(v VisibleTool, specDigest string) *v1alpha1.ToolSnapshot {
	return &v1alpha1.ToolSnapshot{
		Kind:        v.Kind,
		Name:        v.Object,
		Scope:       v.Scope,
		SpecDigest:  specDigest,
		Generation:  v.Generation,
		Spec:        v.Spec.DeepCopy(),
		Annotations: snapshotAnnotations(v.Annotations),
	}
}

// snapshotAnnotations is the part of a tool's annotations its snapshot keeps: all but
// kubectl's last-applied-configuration, a second copy of the spec.
func snapshotAnnotations(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}

// CallInput is what policies and presentation expressions see of a call (CEL variables
// tool, call and arguments), built from the admission snapshot in status only: the tool as
// resolved (name, scope, annotations) and the call's labels as admitted. The operator's
// admission and post-execute stages and the approval console all build it here, so a
// Tool's presentation renders the call the policies judged, and both stages see the same
// tool and call whatever happens to the Tool or the call's labels in between.
func CallInput(call *v1alpha1.ToolCall, frozen *pipeline.Frozen) pipeline.Input {
	in := pipeline.Input{
		Call: pipeline.CallInfo{
			Namespace:       call.Namespace,
			Session:         call.Spec.Session,
			Requester:       call.Spec.Requester,
			RequesterGroups: call.Spec.RequesterGroups,
			Labels:          call.Status.CallLabels,
		},
		Arguments: frozen,
	}
	if snap := call.Status.Tool; snap != nil {
		in.Tool = pipeline.ToolInfo{Scope: snap.Scope, Annotations: snap.Annotations, Name: snap.Name}
		if snap.Spec != nil {
			in.Tool.Name = ToolName(snap.Spec, snap.Name)
			in.Tool.Egress = egressAllow(snap.Spec.Sandbox)
			in.Tool.Credentials = append(Credentials(snap.Spec.Body), proxyCredentials(snap.Spec.Sandbox)...)
		}
	}
	return in
}

// Credential kinds in tool.credentials' "as".
const (
	CredentialAsEnv  = "env"
	CredentialAsFile = "file"
	// CredentialAsProxy: the egress proxy adds it to the body's requests to one host
	// (sandbox.egress.allow[].credential); its name is "host:port".
	CredentialAsProxy = "proxy"
)

// proxyCredentials are the credentials the egress proxy injects, for tool.credentials
// after the body's: a policy keyed on a Secret's name sees them too.
func proxyCredentials(s v1alpha1.Sandbox) []pipeline.Credential {
	if s.Egress == nil {
		return nil
	}
	var out []pipeline.Credential
	for _, r := range s.Egress.Allow {
		if c := r.Credential; c != nil {
			out = append(out, pipeline.Credential{Name: r.Host + ":" + strconv.Itoa(int(r.Port)),
				Secret: c.SecretKeyRef.Name, Key: c.SecretKeyRef.Key, As: CredentialAsProxy})
		}
	}
	return out
}

// Credentials is what policies see as tool.credentials: every Secret key the body is given
// (body.env valueFrom, then body.secretFiles), by name; never a value.
func Credentials(body v1alpha1.ToolBody) []pipeline.Credential {
	var out []pipeline.Credential
	for _, e := range body.Env {
		if e.ValueFrom != nil {
			ref := e.ValueFrom.SecretKeyRef
			out = append(out, pipeline.Credential{Name: e.Name, Secret: ref.Name, Key: ref.Key, As: CredentialAsEnv})
		}
	}
	for _, f := range body.SecretFiles {
		out = append(out, pipeline.Credential{Name: f.Name, Secret: f.SecretKeyRef.Name, Key: f.SecretKeyRef.Key, As: CredentialAsFile})
	}
	return out
}

// egressAllow is what policies see as tool.egress: the tool's sandbox.egress.allow.
func egressAllow(s v1alpha1.Sandbox) []pipeline.HostPort {
	if s.Egress == nil {
		return nil
	}
	out := make([]pipeline.HostPort, 0, len(s.Egress.Allow))
	for _, r := range s.Egress.Allow {
		out = append(out, pipeline.HostPort{Host: r.Host, Port: int(r.Port)})
	}
	return out
}
