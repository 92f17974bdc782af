package toolcall

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// registry is one namespace's view of the registrations, read through the reader it is
// given (admission and post-execute: live LISTs, shared by concurrent calls): the
// pipeline's resolution index plus the objects behind it and the namespace's policies.
type registry struct {
	index    *pipeline.Index
	objects  catalog.Objects
	policies []pipeline.PolicySpec
}

// resolvedTool is the tool a call resolved to, frozen as the call's snapshot.
type resolvedTool struct {
	spec     *v1alpha1.ToolSpec
	snapshot *v1alpha1.ToolSnapshot
}

// loadRegistry lists Tools, ToolScopes and ToolPolicies of the namespace and every
// ClusterTool, the four LISTs at once. A registration error is reported before a policy
// one, so that a caller missing several permissions always hears of the same one.
func loadRegistry(ctx context.Context, c client.Reader, namespace string) (*registry, error) {
	var policies v1alpha1.ToolPolicyList
	var policiesErr error
	var wg sync.WaitGroup
	wg.Go(func() { policiesErr = c.List(ctx, &policies, client.InNamespace(namespace)) })
	l, err := catalog.Fetch(ctx, c, namespace, false)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if policiesErr != nil {
		return nil, policiesErr
	}
	reg := &registry{}
	reg.index, reg.objects = l.Index()
	for i := range policies.Items {
		reg.policies = append(reg.policies, catalog.PolicySpec(&policies.Items[i]))
	}
	return reg, nil
}

// liveRegistry is loadRegistry through the API reader, shared with the calls of the
// namespace that asked at the same time (coalesce.go): its LISTs start after this call, so
// whatever existed when it was made is in the answer. The registry is shared: read only.
func (ad *admitter) liveRegistry(ctx context.Context, namespace string) (*registry, error) {
	r := ad.r
	return ad.registries.Do(ctx, namespace, func(ctx context.Context) (*registry, error) {
		return loadRegistry(ctx, r.APIReader, namespace)
	})
}

// resolve finds the tool a call names in its scope; a Deny decision says why it cannot.
func (reg *registry) resolve(scope, name string) (*resolvedTool, pipeline.Decision) {
	found, err := reg.index.Resolve(scope, name)
	if err != nil {
		return nil, resolveDecision(err)
	}
	tool := reg.objects.Lookup(found)
	return &resolvedTool{spec: tool.Spec, snapshot: catalog.Snapshot(tool, found.SpecDigest)},
		pipeline.Decision{Verdict: pipeline.Allow}
}

func resolveDecision(err error) pipeline.Decision {
	d := pipeline.Decision{Verdict: pipeline.Deny, Reason: pipeline.ReasonToolNotFound, Message: err.Error()}
	if re, ok := err.(*pipeline.ResolveError); ok { //nolint:errorlint // Resolve returns the concrete type
		d.Reason = re.Reason
	}
	return d
}

// ruleMessage is the message the author of the policy rule that decided d wrote for the
// model, or a generic sentence when the rule has none.
func (reg *registry) ruleMessage(d pipeline.Decision) string {
	for _, p := range reg.policies {
		if p.Name != d.Policy {
			continue
		}
		for _, rule := range p.Rules {
			if rule.Name == d.Rule && rule.Message != "" && d.Reason != pipeline.ReasonPolicyError {
				return rule.Message
			}
		}
	}
	return ""
}
