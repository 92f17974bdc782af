package sessionexec

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// claimTries bounds the pool Pods one claim tries (each lost only to another claim).
const claimTries = 5

// bindings is what this process knows of which session each of its session Pods serves
// (memory only: after a restart another CA makes every earlier Pod unusable). A Pod a
// session claimed from a pool has no name of its own to be found by: the session's
// binding names it. A Pod bound to one session is never used by, nor claimed for, another,
// whatever its labels say. The reaper forgets the bindings of Pods that are gone (prune).
type bindings struct {
	mu    sync.Mutex
	pods  map[string]podRef     // session digest → its claimed pool Pod
	bound map[types.UID]binding // Pod uid → the session it serves
	turns [64]sync.Mutex        // the sessions' claim locks, by digest (striped: bounded)
}

type podRef struct {
	key types.NamespacedName
	uid types.UID
}

type binding struct {
	digest string
	at     time.Time // when it was bound
}

// turn is the session's claim lock: two calls of one session never claim two Pods.
func (b *bindings) turn(digest string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(digest))
	return &b.turns[h.Sum32()%uint32(len(b.turns))]
}

// bind records pod as serving the session digest from now; claimed: it is the session's
// pool Pod.
func (b *bindings) bind(digest string, pod *corev1.Pod, claimed bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bound == nil {
		b.bound, b.pods = map[types.UID]binding{}, map[string]podRef{}
	}
	b.bound[pod.UID] = binding{digest: digest, at: now}
	if claimed {
		b.pods[digest] = podRef{key: client.ObjectKeyFromObject(pod), uid: pod.UID}
	}
}

// boundTo is the session the Pod serves (ok false: none this process knows).
func (b *bindings) boundTo(uid types.UID) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	x, ok := b.bound[uid]
	return x.digest, ok
}

// claimed is the session's claimed pool Pod, if it has one.
func (b *bindings) claimed(digest string) (types.NamespacedName, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.pods[digest]
	return r.key, ok
}

// unbind forgets a Pod that went (deleted, or found gone).
func (b *bindings) unbind(uid types.UID, key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.bound, uid)
	for d, r := range b.pods {
		if r.key == key || r.uid == uid && uid != "" {
			delete(b.pods, d)
		}
	}
}

// prune forgets the Pods bound before cutoff that are not in live (the session Pods that
// exist): deleted by someone else (their scope's deletion, their workspace's).
func (b *bindings) prune(live map[types.UID]bool, cutoff time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for uid, x := range b.bound {
		if !live[uid] && x.at.Before(cutoff) {
			delete(b.bound, uid)
		}
	}
	for d, r := range b.pods {
		if _, ok := b.bound[r.uid]; !ok {
			delete(b.pods, d)
		}
	}
}

// podName is the name of the Pod the call's session runs the call in: the pool Pod the
// session claimed, while it is there; else the session Pod's own name (PodName).
func (b *bindings) podName(ctx context.Context, c client.Reader, call *v1alpha1.ToolCall) string {
	key, ok := b.claimed(sessionDigest(call))
	if !ok {
		return PodName(call)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, key, pod); err == nil && pod.DeletionTimestamp.IsZero() {
		return key.Name
	}
	b.unbind(pod.UID, key)
	return PodName(call)
}

// poolServes reports whether the call's tool keeps session pool Pods in the call's
// namespace: a pooled tool (warmpool.Size: no workspace, no feature the warm executor
// lacks), a ClusterTool only in the namespaces its pool lists.
func poolServes(call *v1alpha1.ToolCall) bool {
	snap := call.Status.Tool
	if warmpool.Size(snap.Spec) == 0 {
		return false
	}
	return snap.Kind != v1alpha1.ToolKindClusterTool || slices.Contains(snap.Spec.WarmPool.Namespaces, call.Namespace)
}

// claimer claims session pool Pods for the executor's sessions.
type claimer struct{ s *Executor }

// claim makes a Ready session pool Pod of the call's tool the session's own and
// returns it (nil: none could be had: the session Pod is then created as without a pool).
// Candidates come from the cache, each is read live and taken only when its controller is
// the call's tool with that tool's uid, its template and CA are this process's, its live
// spec is the one the pool builds for its name, and no session of this process ever had
// it; one that is not is deleted, never claimed. The claim is one patch carrying the
// Pod's resourceVersion (two claims never both win one Pod): the pool label removed, the
// session's labels and annotations, the scope as controller (as a session Pod's).
func (k claimer) claim(ctx context.Context, call *v1alpha1.ToolCall, scope *v1alpha1.ToolScope) *corev1.Pod {
	s := k.s
	snap := call.Status.Tool
	template := warmpool.SessionTemplateDigest(snap.Spec, s.Options.Job, s.auth.fingerprint)
	list := &corev1.PodList{}
	if err := s.List(ctx, list, client.InNamespace(call.Namespace), client.MatchingLabels{
		podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelTemplate: template}); err != nil {
		return nil
	}
	var candidates []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; k.claimable(p, snap, template) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	toolUID, err := warmpool.OwnerUID(ctx, s.Client, snap, call.Namespace)
	if err != nil {
		return nil
	}
	rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	for _, c := range candidates[:min(claimTries, len(candidates))] {
		live := &corev1.Pod{}
		if err := s.APIReader.Get(ctx, client.ObjectKeyFromObject(c), live); err != nil || live.UID != c.UID || !k.claimable(live, snap, template) {
			continue
		}
		want := warmpool.SessionPodSpec(snap.Spec, s.Options.Job, live.Name)
		why := warmpool.PodSpecMismatch(&live.Spec, &want)
		if owner := metav1.GetControllerOf(live); owner == nil || owner.UID != toolUID {
			why = "its owner is not the call's tool"
		}
		if why != "" {
			s.deletePod(ctx, live, "a session pool Pod that is not its tool's: "+why)
			continue
		}
		err := k.claimFor(ctx, call, scope, live)
		switch {
		case err == nil:
			s.bindings.bind(sessionDigest(call), live, true, s.Clock.Now())
			s.book.claimed(live.UID, s.Clock.Now())
			metrics.SessionPods.WithLabelValues(call.Namespace, "claimed").Inc()
			return live
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			continue
		default:
			logger(ctx).Info("claiming a session pool Pod failed; the session starts its own", "pod", live.Name, "error", err.Error())
			return nil
		}
	}
	return nil
}

// claimable: an idle session pool Pod of the snapshot's tool and this process's template,
// Ready, not ended, not being deleted, and never bound to a session by this process (a Pod
// relabelled back into a pool after serving a session is not claimed again).
func (k claimer) claimable(p *corev1.Pod, snap *v1alpha1.ToolSnapshot, template string) bool {
	s := k.s
	if _, bound := s.bindings.boundTo(p.UID); bound {
		return false
	}
	return p.Labels[podcontract.LabelPool] != "" && p.Labels[podcontract.LabelTemplate] == template &&
		p.Labels[podcontract.LabelSessionPod] == "" && p.Annotations[podcontract.AnnotationSessionCA] == s.auth.fingerprint &&
		p.DeletionTimestamp.IsZero() && warmpool.PodReady(p) && !warmpool.PodEnded(p) && warmpool.PooledBy(p, snap)
}

// claimFor patches pod into the call's session (optimistic lock on its resourceVersion).
func (k claimer) claimFor(ctx context.Context, call *v1alpha1.ToolCall, scope *v1alpha1.ToolScope, pod *corev1.Pod) error {
	s := k.s
	spec := warmpool.SessionPodSpec(call.Status.Tool.Spec, s.Options.Job, pod.Name)
	want, err := s.buildPod(call, scope, pod.Name, spec)
	if err != nil {
		return err
	}
	want.Annotations[podcontract.AnnotationSessionSpec] = podspec.SessionSpecDigest(&spec)
	orig := pod.DeepCopy()
	delete(pod.Labels, podcontract.LabelPool)
	for k, v := range want.Labels {
		pod.Labels[k] = v
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for k, v := range want.Annotations {
		pod.Annotations[k] = v
	}
	pod.OwnerReferences = nil
	if err := controllerutil.SetControllerReference(scope, pod, s.Scheme); err != nil {
		return err
	}
	return s.Patch(ctx, pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// claimed notes a Pod just claimed as idle from now (not from when its pool started it).
func (b *book) claimed(pod types.UID, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since == nil {
		b.users, b.since = map[types.UID]map[types.UID]bool{}, map[types.UID]time.Time{}
	}
	b.since[pod] = now
}
