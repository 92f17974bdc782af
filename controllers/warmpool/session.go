package warmpool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Session pool Pods: in a namespace where a ToolScope declares sessionSandbox, a pooled
// tool (one that uses no feature the warm executor lacks, so no workspace) also keeps size
// Pods built as its session Pods are (the session runner, listening for the operator over
// mutual TLS with a Secret of its own from the session executor's process CA). A session's
// first call of the tool claims one (the session executor, sessionexec) instead of starting
// a session Pod: the Pod then serves that session only, for the session's life, and never
// comes back to the pool. Their template label digests the spec and the CA's fingerprint,
// so the Pods of another operator process (another CA, which this process cannot reach)
// are of another template and retired, never claimed.

// SessionTLS is what the pool needs of the session executor's process CA (sessionexec).
type SessionTLS interface {
	// Fingerprint names this process's CA (podcontract.AnnotationSessionCA).
	Fingerprint() string
	// Secret is the TLS Secret of the session Pod pod (named as the Pod): its server
	// certificate and key for its own name, and the CA as client CA. No owner is set.
	Secret(pod *corev1.Pod) (*corev1.Secret, error)
}

// SessionPodSpec is the spec of a session pool Pod named name: what the session executor
// builds for a session Pod of spec's tool (podspec.SessionPodSpec; nothing of a call is in
// it, and a pooled tool uses no feature that prepares the Pod), its TLS Secret named as
// the Pod.
func SessionPodSpec(spec *v1alpha1.ToolSpec, opts podspec.Options, name string) corev1.PodSpec {
	return podspec.SessionPodSpec(podspec.Input{Call: &v1alpha1.ToolCall{}, Tool: spec}, opts, name)
}

// SessionTemplateDigest is the template label of spec's session pool Pods under the CA
// fingerprint: 32 hex of the SHA-256 of the spec (its Secret's name left out) and the
// fingerprint. A Tool edit, other Pod settings or another process's CA give another.
func SessionTemplateDigest(spec *v1alpha1.ToolSpec, opts podspec.Options, fingerprint string) string {
	b, err := json.Marshal(SessionPodSpec(spec, opts, ""))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(append(append(b, 0), fingerprint...))
	return hex.EncodeToString(sum[:16])
}

// buildSessionPod is one session pool Pod of p under the CA fingerprint: its name chosen
// here (its Secret must be named in its spec), labelled as a pool Pod of p.
func buildSessionPod(p Pool, opts podspec.Options, fingerprint string) *corev1.Pod {
	name := strings.TrimRight(truncate(p.owner.GetName(), 40), ".-") + "-warms-" + utilrand.String(5)
	spec := SessionPodSpec(p.spec, opts, name)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: p.namespace,
			Labels:    p.labels(SessionTemplateDigest(p.spec, opts, fingerprint)),
			Annotations: map[string]string{
				podcontract.AnnotationTool:        p.name(),
				podcontract.AnnotationSessionCA:   fingerprint,
				podcontract.AnnotationSessionSpec: podspec.SessionSpecDigest(&spec),
			},
		},
		Spec: spec,
	}
}

// sessionsDeclared reports whether a ToolScope of namespace declares sessionSandbox (from
// the cache): only there are session pool Pods kept.
func (r *Reconciler) sessionsDeclared(ctx context.Context, namespace string) (bool, error) {
	scopes := &v1alpha1.ToolScopeList{}
	if err := r.List(ctx, scopes, client.InNamespace(namespace)); err != nil {
		return false, err
	}
	for i := range scopes.Items {
		if scopes.Items[i].Spec.SessionSandbox != nil && scopes.Items[i].DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}

// createSessionPod creates one session pool Pod of p, then its TLS Secret, owned by the
// Pod (it goes with the Pod, whoever deletes it). The Pod's signer starts once the Secret
// exists; a Secret that cannot be made takes its Pod back.
func (r *Reconciler) createSessionPod(ctx context.Context, p Pool) error {
	pod := buildSessionPod(p, r.Job, r.Sessions.Fingerprint())
	if err := controllerutil.SetControllerReference(p.owner, pod, r.Scheme); err != nil {
		return err
	}
	if err := r.Create(ctx, pod); err != nil {
		return err
	}
	sec, err := r.Sessions.Secret(pod)
	if err == nil {
		sec.Labels = map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue}
		sec.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
		err = r.Create(ctx, sec)
	}
	if err != nil {
		uid := pod.UID
		_ = r.Delete(ctx, pod, client.Preconditions{UID: &uid})
	}
	return err
}

// toolsOfScope brings back the Tools of a ToolScope's namespace and the ClusterTools that
// keep a pool there: whether they keep session pool Pods depends on its sessionSandbox.
func (r *Reconciler) toolsOfScope(ctx context.Context, o client.Object) []reconcile.Request {
	tools := &v1alpha1.ToolList{}
	if err := r.List(ctx, tools, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range tools.Items {
		if Declared(&tools.Items[i].Spec.ToolSpec) > 0 {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tools.Items[i])})
		}
	}
	return reqs
}

// clusterToolsOfScope brings back the ClusterTools that keep a pool in a ToolScope's namespace.
func (r *Reconciler) clusterToolsOfScope(ctx context.Context, o client.Object) []reconcile.Request {
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: o.GetNamespace()}}
	return r.listingNamespace(ctx, ns)
}

// PooledBy: the Pod is in the pool of the call's tool (a Tool's, or a ClusterTool's, of
// that name), not another tool's whose Pod template happens to be the same.
func PooledBy(pod *corev1.Pod, snap *v1alpha1.ToolSnapshot) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.Kind == string(snap.Kind) && owner.Name == snap.Name &&
		owner.APIVersion == v1alpha1.GroupVersion.String()
}

// OwnerUID is the uid of the snapshot's tool (a Tool in namespace, or a ClusterTool), from
// c: a pool Pod must be controlled by that very object.
func OwnerUID(ctx context.Context, c client.Reader, snap *v1alpha1.ToolSnapshot, namespace string) (types.UID, error) {
	var tool client.Object = &v1alpha1.Tool{}
	key := types.NamespacedName{Namespace: namespace, Name: snap.Name}
	if snap.Kind == v1alpha1.ToolKindClusterTool {
		tool, key.Namespace = &v1alpha1.ClusterTool{}, ""
	}
	if err := c.Get(ctx, key, tool); err != nil {
		return "", err
	}
	return tool.GetUID(), nil
}
