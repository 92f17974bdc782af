package toolgatetest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Session workspaces in envtest, which has neither a volume provisioner nor the
// pvc-protection controller: the Kubelet binds every workspace claim the operator creates
// (status.phase Bound, unless HoldClaims), releases a deleted claim's pvc-protection
// finalizer, and gives each claim an in-memory file store, its Workspace. A Job whose Pod
// mounts a claim that is not bound gets no Pod until the claim binds (a real Pod would wait
// Pending: the operator sees no container start either). A tool scripted with
// ScriptWorkspace plays a body that works on its call's Workspace: ReadOnly mounts get a
// view that refuses writes.

// claimPoll is how often a Job waiting for its claim looks again.
const claimPoll = 100 * time.Millisecond

// pvcProtection is the finalizer the API server's StorageObjectInUseProtection admission
// puts on every claim; the controller that releases it does not run in envtest.
const pvcProtection = "kubernetes.io/pvc-protection"

// ErrReadOnlyWorkspace is what a ReadOnly view's WriteFile returns.
var ErrReadOnlyWorkspace = errors.New("read-only file system: the tool mounts the workspace ReadOnly")

// WorkspaceBody is a scripted tool body working on its session's Workspace: it receives
// the call's frozen arguments (the canonical JSON the runner hands the body) and returns
// the outcome the Pod then plays.
type WorkspaceBody func(ws *Workspace, args []byte) Outcome

// Workspace is one claim's in-memory files, as one Pod mounts them.
type Workspace struct {
	store    *workspaceStore
	readOnly bool
}

type workspaceStore struct {
	mu    sync.Mutex
	files map[string][]byte
}

// ReadOnly says the Pod mounts the workspace read-only.
func (w *Workspace) ReadOnly() bool { return w.readOnly }

// ReadFile returns a copy of the named file's content; false when there is none.
func (w *Workspace) ReadFile(name string) ([]byte, bool) {
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	data, ok := w.store.files[name]
	return slices.Clone(data), ok
}

// WriteFile stores data under name (ErrReadOnlyWorkspace on a ReadOnly view).
func (w *Workspace) WriteFile(name string, data []byte) error {
	if w.readOnly {
		return ErrReadOnlyWorkspace
	}
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.files[name] = slices.Clone(data)
	return nil
}

// Files returns the names of the workspace's files, sorted.
func (w *Workspace) Files() []string {
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	names := make([]string, 0, len(w.store.files))
	for name := range w.store.files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// workspaces is the Kubelet's part for session workspaces.
type workspaces struct {
	mu     sync.Mutex
	hold   bool
	bodies map[string]WorkspaceBody
	stores map[types.NamespacedName]*workspaceStore
}

// ScriptWorkspace makes every Pod of the named tool that mounts a workspace run body on
// it (at least once per Pod); its Outcome wins over Script and ScriptAttempts.
func (k *Kubelet) ScriptWorkspace(tool string, body WorkspaceBody) {
	k.ws.mu.Lock()
	defer k.ws.mu.Unlock()
	if k.ws.bodies == nil {
		k.ws.bodies = map[string]WorkspaceBody{}
	}
	k.ws.bodies[tool] = body
}

// HoldClaims leaves workspace claims created from now on unbound (true), as a cluster
// without a provisioner for their storage class does, or binds them again (false).
func (k *Kubelet) HoldClaims(hold bool) {
	k.ws.mu.Lock()
	defer k.ws.mu.Unlock()
	k.ws.hold = hold
}

// Workspace is the read-write view of the claim's files (nil: the claim never had a
// workspace Pod, or it was deleted and its files with it).
func (k *Kubelet) Workspace(namespace, claim string) *Workspace {
	k.ws.mu.Lock()
	defer k.ws.mu.Unlock()
	if s := k.ws.stores[types.NamespacedName{Namespace: namespace, Name: claim}]; s != nil {
		return &Workspace{store: s}
	}
	return nil
}

func (k *Kubelet) store(key types.NamespacedName) *workspaceStore {
	k.ws.mu.Lock()
	defer k.ws.mu.Unlock()
	if k.ws.stores == nil {
		k.ws.stores = map[types.NamespacedName]*workspaceStore{}
	}
	s := k.ws.stores[key]
	if s == nil {
		s = &workspaceStore{files: map[string][]byte{}}
		k.ws.stores[key] = s
	}
	return s
}

// workspaceMount is the claim the Job's tool container mounts, and whether read-only.
func workspaceMount(job *batchv1.Job) (claim string, readOnly bool) {
	return specWorkspaceMount(&job.Spec.Template.Spec)
}

// specWorkspaceMount is the claim a Pod spec's tool container mounts, and whether read-only.
func specWorkspaceMount(spec *corev1.PodSpec) (claim string, readOnly bool) {
	for _, v := range spec.Volumes {
		if v.Name == podcontract.WorkspaceVolume && v.PersistentVolumeClaim != nil {
			claim, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
		}
	}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == podcontract.WorkspaceVolume && m.ReadOnly {
				readOnly = true
			}
		}
	}
	return claim, readOnly
}

// workspaceReady says whether the whole Job's Pod may start now: its claim (if any) is
// bound (not ready: the caller looks again after claimPoll).
func (k *Kubelet) workspaceReady(ctx context.Context, job *batchv1.Job) (bool, error) {
	claim, _ := workspaceMount(job)
	if claim == "" {
		return true, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k.reader().Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: claim}, pvc); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return pvc.Status.Phase == corev1.ClaimBound && pvc.DeletionTimestamp.IsZero(), nil
}

// workspaceOutcome runs the tool's WorkspaceBody on the whole Job's workspace, if the tool
// has one and the Pod mounts a claim; else o stands.
func (k *Kubelet) workspaceOutcome(job *batchv1.Job, o Outcome) Outcome {
	claim, readOnly := workspaceMount(job)
	k.ws.mu.Lock()
	body := k.ws.bodies[job.Annotations[podcontract.AnnotationTool]]
	k.ws.mu.Unlock()
	if claim == "" || body == nil || len(job.Spec.Template.Spec.Containers) == 0 {
		return o
	}
	args := expandEnv(signerSpec(&job.Spec.Template.Spec))[podcontract.EnvArgs]
	ws := &Workspace{store: k.store(types.NamespacedName{Namespace: job.Namespace, Name: claim}), readOnly: readOnly}
	return body(ws, []byte(args))
}

// sessionWorkspaceOutcome runs the tool's WorkspaceBody with a session call's arguments on
// the workspace its session Pod mounts, if the tool has one and the Pod mounts a claim;
// else o stands.
func (k *Kubelet) sessionWorkspaceOutcome(pod *corev1.Pod, args []byte, o Outcome) Outcome {
	claim, readOnly := specWorkspaceMount(&pod.Spec)
	k.ws.mu.Lock()
	body := k.ws.bodies[pod.Annotations[podcontract.AnnotationTool]]
	k.ws.mu.Unlock()
	if claim == "" || body == nil {
		return o
	}
	ws := &Workspace{store: k.store(types.NamespacedName{Namespace: pod.Namespace, Name: claim}), readOnly: readOnly}
	return body(ws, args)
}

// setupWorkspaces runs the claim side: bind new workspace claims, release deleted ones.
func (k *Kubelet) setupWorkspaces(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue &&
				o.GetLabels()[podcontract.LabelWorkspaceScope] != ""
		}))).
		Named("simulated-volumes").
		Complete(reconcileFunc(k.reconcileClaim))
}

type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// reconcileClaim binds a new claim (unless held) and, once the claim is deleted, drops its
// files and releases its pvc-protection finalizer.
func (k *Kubelet) reconcileClaim(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k.Get(ctx, req.NamespacedName, pvc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pvc.DeletionTimestamp.IsZero() {
		k.ws.mu.Lock()
		delete(k.ws.stores, req.NamespacedName)
		k.ws.mu.Unlock()
		if !slices.Contains(pvc.Finalizers, pvcProtection) {
			return ctrl.Result{}, nil
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Finalizers = slices.DeleteFunc(pvc.Finalizers, func(f string) bool { return f == pvcProtection })
		return ctrl.Result{}, client.IgnoreNotFound(k.Patch(ctx, pvc, patch))
	}
	k.ws.mu.Lock()
	hold := k.ws.hold
	k.ws.mu.Unlock()
	if hold || pvc.Status.Phase == corev1.ClaimBound {
		return ctrl.Result{}, nil
	}
	pvc.Status.Phase = corev1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = pvc.Spec.Resources.Requests
	return ctrl.Result{}, client.IgnoreNotFound(k.Status().Update(ctx, pvc))
}
