package controllers

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/frame"
)

// The operator reads the Secret of each egress credential in the calling namespace. It
// already creates Pods there that mount any Secret of the namespace, so reading one itself
// gives it nothing it could not take.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// defaultInjectHeader is the header of a credential that names none (the CRD's default).
const defaultInjectHeader = "Authorization"

// checkEgressCA checks the egress CA the operator hands to bodies: PEM, only certificates,
// at least one of them a CA.
func checkEgressCA(ca []byte) error {
	rest, found := ca, false
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if b.Type != "CERTIFICATE" || err != nil {
			return fmt.Errorf("egress proxy CA: a %q block that is no certificate", b.Type)
		}
		found = found || cert.IsCA
	}
	if len(strings.TrimSpace(string(rest))) > 0 || !found {
		return errors.New("egress proxy CA: want PEM certificates, at least one of them a CA, and nothing else")
	}
	return nil
}

// credentialProblem ends an attempt whose egress credential cannot be injected, as the
// kubelet's refusal of a body credential does: CredentialMissing or CredentialTooShort,
// with the Secret and key named in the Executed condition, never the value.
func credentialProblem(attempt int32, reason, detail string) *pipeline.Outcome {
	return &pipeline.Outcome{TerminationReason: reason, Attempt: int(attempt), Detail: "operator: " + detail}
}

// egressInjections reads, from the call's namespace, the value of each credential of the
// tool's egress allow list and returns the headers the proxy is to set. A missing Secret or
// key, or a value that is no header value, ends the attempt CredentialMissing; a value too
// short to redact CredentialTooShort (the rule of body credentials). Other read errors are
// returned, to be retried.
func egressInjections(ctx context.Context, r client.Reader, call *toolgatev1alpha1.ToolCall, attempt int32) ([]egress.Injection, *pipeline.Outcome, error) {
	var out []egress.Injection
	secrets := map[string]*corev1.Secret{}
	for _, rule := range podspec.EgressCredentials(call.Status.Tool.Spec.Sandbox) {
		c := rule.Credential
		ref := c.SecretKeyRef
		where := fmt.Sprintf("(the credential for %s:%d)", rule.Host, rule.Port)
		s, ok := secrets[ref.Name]
		if !ok {
			s = &corev1.Secret{}
			err := r.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: ref.Name}, s)
			if apierrors.IsNotFound(err) {
				return nil, credentialProblem(attempt, pipeline.TerminationCredentialMissing, fmt.Sprintf("secret %q not found %s", ref.Name, where)), nil
			}
			if err != nil {
				return nil, nil, fmt.Errorf("reading Secret %s/%s %s: %w", call.Namespace, ref.Name, where, err)
			}
			secrets[ref.Name] = s
		}
		raw, ok := s.Data[ref.Key]
		if !ok {
			return nil, credentialProblem(attempt, pipeline.TerminationCredentialMissing, fmt.Sprintf("couldn't find key %s in Secret %s/%s %s", ref.Key, call.Namespace, ref.Name, where)), nil
		}
		value := strings.TrimSpace(string(raw))
		if len(value) < frame.MinCredentialBytes {
			return nil, credentialProblem(attempt, pipeline.TerminationCredentialTooShort, fmt.Sprintf("the value of key %s in Secret %s/%s %s is %d bytes; at least %d are needed to redact it",
				ref.Key, call.Namespace, ref.Name, where, len(value), frame.MinCredentialBytes)), nil
		}
		if !headerValue(value) {
			return nil, credentialProblem(attempt, pipeline.TerminationCredentialMissing, fmt.Sprintf("the value of key %s in Secret %s/%s %s is no HTTP header value the proxy sets (at most %d bytes of visible ASCII, spaces and tabs)",
				ref.Key, call.Namespace, ref.Name, where, maxInjectValueBytes)), nil
		}
		out = append(out, egress.Injection{Host: rule.Host, Port: rule.Port, Header: injectHeader(c), Value: injectValue(c, value)})
	}
	return out, nil, nil
}

// maxInjectValueBytes bounds an injected value (the proxy's bound: a large JWT fits).
const maxInjectValueBytes = 4096

// headerValue reports whether v can be a header's value as the proxy sets it: visible
// ASCII, spaces and tabs, within the bound. A line break would be a second header (or a
// second request) whoever wrote the Secret chose.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c > 0x7e {
			return false
		}
	}
	return len(v) <= maxInjectValueBytes
}

func injectHeader(c *toolgatev1alpha1.EgressCredential) string {
	if c.Header == "" {
		return defaultInjectHeader
	}
	return c.Header
}

// injectValue is the header's whole value: the scheme, a space and the value, or the value.
func injectValue(c *toolgatev1alpha1.EgressCredential, value string) string {
	if c.Scheme == "" {
		return value
	}
	return c.Scheme + " " + value
}

// attemptProxy is what an attempt's Pod gets of the egress proxy (all empty: nothing).
type attemptProxy struct {
	url   string
	alias *corev1.HostAlias
	ca    string
}

// attemptEgress prepares the egress proxy of the attempt about to start: the credentials to
// inject (read now, from the call's namespace), the signed proxy URL, the proxy's host alias
// and the CA the body must trust. Not ok: the attempt ends or is refused with st, or err is
// retried.
func (j *jobExecutor) attemptEgress(ctx context.Context, call *toolgatev1alpha1.ToolCall, attempt int32) (attemptProxy, executor.Step, bool, error) {
	o := j.Options.EgressProxy
	sandbox := call.Status.Tool.Spec.Sandbox
	if why := o.egressUnavailable(sandbox); why != "" {
		return attemptProxy{}, netisolation.Refuse(why), false, nil
	}
	if !podspec.HasEgressAllow(sandbox) {
		return attemptProxy{}, executor.Step{}, true, nil
	}
	inject, ended, err := egressInjections(ctx, j.APIReader, call, attempt)
	if ended != nil || err != nil {
		return attemptProxy{}, executor.Step{Outcome: ended}, false, err
	}
	var px attemptProxy
	var why string
	if px.url, why = o.egressProxyURL(call, attempt, j.attemptDeadline(call), inject); why != "" {
		return attemptProxy{}, netisolation.Refuse(why), false, nil
	}
	if px.alias, err = o.proxyHostAlias(ctx); err != nil {
		return attemptProxy{}, executor.Step{}, false, err // retried: cluster DNS may be starting
	}
	if len(inject) > 0 {
		px.ca = string(o.CA)
	}
	return px, executor.Step{}, true, nil
}
