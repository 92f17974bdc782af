package sessionexec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// declaration is the nearest scope on the call's chain (its own first) that declares
// sessionSandbox; nil when none does.
func (s *Executor) declaration(ctx context.Context, call *v1alpha1.ToolCall) (*v1alpha1.ToolScope, error) {
	return registration.NearestScope(ctx, s.Client, call.Namespace, call.Spec.Scope,
		func(sc *v1alpha1.ToolScope) bool { return sc.Spec.SessionSandbox != nil })
}

// idleTimeout is how long the scope's session Pods are kept idle: its own, else the
// operator's default, never over the operator's ceiling.
func idleTimeout(o options.Session, scope *v1alpha1.ToolScope) time.Duration {
	d := o.IdleTimeout
	if decl := scope.Spec.SessionSandbox; decl != nil && decl.IdleTimeout != nil {
		d = decl.IdleTimeout.Duration
	}
	if c := o.IdleCeiling; c > 0 && d > c {
		d = c
	}
	return d
}

// sessionDigest identifies a session Pod: the call's namespace, scope, session and
// requester, and its tool's snapshot (NUL-joined; none contains NUL).
func sessionDigest(call *v1alpha1.ToolCall) string {
	key := call.Namespace + "\x00" + call.Spec.Scope + "\x00" + call.Spec.Session + "\x00" + call.Spec.Requester +
		"\x00" + call.Spec.Tool + "\x00" + podspec.SessionToolDigest(call.Status.Tool.Spec)
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:40]
}

// PodName is the name of the session Pod a call of a session runs in (and of its Secret).
func PodName(call *v1alpha1.ToolCall) string {
	return podNameOf(sessionDigest(call))
}

// podNameOf is the name of the session Pod of session digest d.
func podNameOf(d string) string {
	return "toolgate-session-" + d
}

func requesterDigest(requester string) string {
	sum := sha256.Sum256([]byte(requester))
	return hex.EncodeToString(sum[:])[:40]
}

// buildPod is the session Pod name of the call's session and tool with spec (for a call,
// podspec.SessionPodSpec of its input, prepared by its features): labels that say what it
// is for, the operator's CA fingerprint, owned by the scope that declared the sandbox
// (deleting the scope deletes its sessions' Pods). The caller adds the spec's digest once
// the features prepared it.
func (s *Executor) buildPod(call *v1alpha1.ToolCall, scope *v1alpha1.ToolScope, name string, spec corev1.PodSpec) (*corev1.Pod, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: call.Namespace,
		Labels: map[string]string{
			podcontract.LabelManagedBy:        podcontract.ManagedByValue,
			podcontract.LabelTool:             podspec.ToolLabelValue(call.Spec.Tool),
			podcontract.LabelNetwork:          podspec.SandboxNetworkLabel(call.Status.Tool.Spec.Sandbox),
			podcontract.LabelSessionPod:       sessionDigest(call),
			podcontract.LabelSessionRequester: requesterDigest(call.Spec.Requester),
		},
		Annotations: map[string]string{
			podcontract.AnnotationTool:               call.Spec.Tool,
			podcontract.AnnotationSession:            call.Spec.Session,
			podcontract.AnnotationSessionScope:       call.Spec.Scope,
			podcontract.AnnotationSessionRequester:   call.Spec.Requester,
			podcontract.AnnotationSessionCA:          s.auth.fingerprint,
			podcontract.AnnotationSessionIdleTimeout: idleTimeout(s.Options.Session, scope).String(),
		}},
		Spec: spec}
	return pod, controllerutil.SetControllerReference(scope, pod, s.Scheme)
}

// vet says why the live Pod may not serve the call ("" when it may): it must be what the
// call's session and tool ask for — this process's CA, the session's labels and
// annotations, the scope as controller, the spec digest of want — running and not ended.
// A Pod relabelled or re-annotated into another session, or one another process started,
// fails: it is replaced, never used.
func vet(live, want *corev1.Pod) string {
	for _, k := range []string{podcontract.LabelManagedBy, podcontract.LabelSessionPod, podcontract.LabelSessionRequester, podcontract.LabelNetwork} {
		if live.Labels[k] != want.Labels[k] {
			return "its label " + k + " is not the session's"
		}
	}
	for _, k := range []string{podcontract.AnnotationSession, podcontract.AnnotationSessionScope, podcontract.AnnotationSessionRequester,
		podcontract.AnnotationSessionCA, podcontract.AnnotationSessionSpec, podcontract.AnnotationTool} {
		if live.Annotations[k] != want.Annotations[k] {
			return "its annotation " + k + " is not the session's"
		}
	}
	owner, wantOwner := metav1.GetControllerOf(live), metav1.GetControllerOf(want)
	if owner == nil || wantOwner == nil || owner.UID != wantOwner.UID {
		return "its owner is not the session's scope"
	}
	if !live.DeletionTimestamp.IsZero() || live.Status.Phase == corev1.PodSucceeded || live.Status.Phase == corev1.PodFailed {
		return "it has ended"
	}
	return ""
}

// tlsSecret is the session Pod's Secret: its server certificate and key (for its own name)
// and the client CA, this process's. Owned by the scope, as the Pod; deleted with the Pod.
func (s *Executor) tlsSecret(pod *corev1.Pod) (*corev1.Secret, error) {
	sec, err := s.auth.secret(s.Clock.Now(), pod)
	if err != nil {
		return nil, err
	}
	sec.Labels = map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelSessionPod: pod.Labels[podcontract.LabelSessionPod]}
	sec.OwnerReferences = pod.OwnerReferences
	return sec, nil
}

// ensurePod returns the session's Pod for want: the live one when it may serve (vet),
// else nil after deleting the one that may not (the caller looks again once it is gone),
// else — none there — its Secret and the Pod created, started is true.
func (s *Executor) ensurePod(ctx context.Context, want *corev1.Pod) (pod *corev1.Pod, started bool, why string, err error) {
	live := &corev1.Pod{}
	err = s.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		err = s.APIReader.Get(ctx, client.ObjectKeyFromObject(want), live)
	}
	switch {
	case err == nil:
		if why = vet(live, want); why == "" {
			why = s.bindings.servesAnother(live, want)
		}
		if why == "" {
			s.bindings.bind(want.Labels[podcontract.LabelSessionPod], live, false, s.Clock.Now())
			return live, false, "", nil
		}
		s.deletePod(ctx, live, "replaced: "+why)
		return nil, false, why, nil
	case !apierrors.IsNotFound(err):
		return nil, false, "", err
	}
	sec, err := s.tlsSecret(want)
	if err != nil {
		return nil, false, "", err
	}
	if err := s.Create(ctx, sec); apierrors.IsAlreadyExists(err) {
		// Left by a Pod that went (or another process's): it holds another CA's files. It
		// is deleted; a later pass creates this process's.
		stale := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sec.Name, Namespace: sec.Namespace}}
		return nil, false, "", client.IgnoreNotFound(s.Delete(ctx, stale))
	} else if err != nil {
		return nil, false, "", err
	}
	if err := s.Create(ctx, want); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, false, "", nil // another pass created it: the next one reads it
		}
		return nil, false, "", err
	}
	// A Pod made in place of a claimed pool Pod keeps that Pod's name: the session's binding
	// names it for the session's next calls.
	s.bindings.bind(want.Labels[podcontract.LabelSessionPod], want, want.Name != podNameOf(want.Labels[podcontract.LabelSessionPod]), s.Clock.Now())
	return want, true, "", nil
}

// servesAnother says why live may not serve want's session although its labels say it may
// ("" when it may): this process bound it to another session (it served one, or was
// claimed for one). Labels can be rewritten by whoever may patch Pods; the binding cannot.
func (b *bindings) servesAnother(live, want *corev1.Pod) string {
	if d, ok := b.boundTo(live.UID); ok && d != want.Labels[podcontract.LabelSessionPod] {
		return "it serves another session"
	}
	return ""
}

// deletePod deletes a session Pod (uid precondition) and its Secret, and forgets its
// connection: it is never used again.
func (s *Executor) deletePod(ctx context.Context, pod *corev1.Pod, why string) {
	s.transport.Forget(pod.UID)
	s.book.forget(pod.UID)
	s.bindings.unbind(pod.UID, client.ObjectKeyFromObject(pod))
	uid := pod.UID
	if err := s.Delete(ctx, pod, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		logger(ctx).Error(err, "could not delete a session Pod", "pod", pod.Name)
		return
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if err := s.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
		logger(ctx).Error(err, "could not delete a session Pod's Secret", "secret", sec.Name)
	}
	logger(ctx).Info("deleted a session Pod", "pod", pod.Name, "why", why)
}
