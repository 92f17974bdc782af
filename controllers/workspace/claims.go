package workspace

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get

const (
	// defaultWorkspaceSize and defaultWorkspaceRetention apply when a declaration was
	// stored without the CRD's defaults (a client that bypassed them cannot: they are
	// applied by the API server; these keep the operator total).
	defaultWorkspaceSize      = "1Gi"
	defaultWorkspaceRetention = time.Hour
	// workspaceWait is how soon a call looks again at a claim that is being deleted.
	workspaceWait = 500 * time.Millisecond
	// workspaceBindPoll is how soon a call looks again at a new claim of a storage class
	// that binds at once (its Job waits for the claim to be Bound).
	workspaceBindPoll = time.Second
)

// workspaceRefusal ends a call whose tool asks for a workspace the call cannot have.
func workspaceRefusal(reason, detail, message string) executor.Step {
	return executor.Refuse(executor.Refusal{Reason: reason, Message: message, Detail: detail})
}

// Claims makes ready the session workspaces of calls' attempts (For) and says when an
// attempt ended because its claim never bound (Unbound). It writes no call status: it
// returns what a pass comes to, as an executor.Step.
type Claims struct {
	// Client reads scopes and claims from the cache and creates and patches claims.
	Client client.Client
	// APIReader reads claims and storage classes live.
	APIReader client.Reader
	// Scheme sets a claim's owner reference (its scope).
	Scheme *runtime.Scheme
	// Clock is the operator's clock.
	Clock clock.PassiveClock
	// Options are the operator-wide settings of workspaces.
	Options Options
	// Deadline is when the operator ends the call's current attempt if nobody reported on
	// it: a call waits for its claim to bind until then.
	Deadline func(call *v1alpha1.ToolCall) time.Time
}

// For makes ready the session workspace the call's attempt mounts: nil when its
// tool asks for none. The claim is created on the session's first such call; its binding
// is not waited for here (a storage class that binds on first use binds only once the Pod
// exists): the Pod waits for it, and an attempt that never started because its claim did
// not bind ends WorkspaceUnbound (Unbound). Not ok: st or err is what this pass
// comes to (a refusal, or a wait for a claim being deleted to go).
func (c *Claims) For(ctx context.Context, call *v1alpha1.ToolCall) (m *podspec.WorkspaceMount, st executor.Step, ok bool, err error) {
	access := Access(call.Status.Tool.Spec)
	if access == "" {
		return nil, executor.Step{}, true, nil
	}
	if call.Spec.Session == "" {
		msg := "the call was not run: its tool works in a session workspace, and the call names no session"
		return nil, workspaceRefusal(v1alpha1.ReasonWorkspaceNeedsSession, "spec.session is empty", msg), false, nil
	}
	scope, decl, err := c.workspaceDeclaration(ctx, call)
	if err != nil {
		return nil, executor.Step{}, false, err
	}
	if decl == nil {
		msg := "the call was not run: its tool works in a session workspace, and no workspace is declared for the call's scope"
		return nil, workspaceRefusal(v1alpha1.ReasonNoWorkspace, "no ToolScope on the call's chain declares spec.workspace", msg), false, nil
	}
	pvc, err := c.ensureClaim(ctx, call, scope, decl)
	var foreign errForeignClaim
	switch {
	case errors.As(err, &foreign) || apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// A quota, an admission policy or an object in the way: retrying will not help.
		msg := "the call was not run: its session workspace could not be provisioned"
		return nil, workspaceRefusal(v1alpha1.ReasonWorkspaceUnbound, "the session's PersistentVolumeClaim could not be created: "+err.Error(), msg), false, nil
	case err != nil:
		return nil, executor.Step{}, false, err
	}
	if !pvc.DeletionTimestamp.IsZero() {
		// The session was idle past its retention a moment ago: the next claim is a new one.
		return nil, executor.Step{Requeue: workspaceWait}, false, nil
	}
	if c.awaitsBinding(ctx, pvc) {
		// Until the deadline: then start's tooLate ends the attempt WorkspaceUnbound.
		return nil, executor.Step{Requeue: min(workspaceBindPoll, max(c.Deadline(call).Sub(c.Clock.Now()), time.Millisecond))}, false, nil
	}
	creds, st, ok, err := c.claimCredentials(ctx, call, pvc)
	if !ok {
		return nil, st, false, err
	}
	return &podspec.WorkspaceMount{ClaimName: pvc.Name, ReadOnly: access == v1alpha1.WorkspaceReadOnly, Credentials: creds}, executor.Step{}, true, nil
}

// awaitsBinding is true while a claim of a storage class that binds at once
// (volumeBindingMode Immediate) is not Bound yet: its Pod is not created before, because a
// kubelet that starts the Pod meanwhile finds the claim unbound and backs off its mount
// for seconds to minutes (found on the local cluster: the session's first call lost ~10 s,
// once its whole deadline). A class that binds on first use (WaitForFirstConsumer) binds
// only once the Pod exists, and a claim without a class, or whose class cannot be read
// (the storage class is read live, with get only), is not waited for: its Pod waits.
func (c *Claims) awaitsBinding(ctx context.Context, pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Status.Phase == corev1.ClaimBound || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return false
	}
	class := &storagev1.StorageClass{}
	if err := c.APIReader.Get(ctx, types.NamespacedName{Name: *pvc.Spec.StorageClassName}, class); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("storage class not read; not waiting for the claim to bind", "class", *pvc.Spec.StorageClassName, "error", err.Error())
		return false
	}
	return class.VolumeBindingMode == nil || *class.VolumeBindingMode == storagev1.VolumeBindingImmediate
}

// workspaceDeclaration is the nearest scope on the call's chain (its own first) that
// declares a workspace, and the declaration; nil when none does (or the call is made in
// the namespace layer, which declares none).
func (c *Claims) workspaceDeclaration(ctx context.Context, call *v1alpha1.ToolCall) (*v1alpha1.ToolScope, *v1alpha1.Workspace, error) {
	scope, err := registration.NearestScope(ctx, c.Client, call.Namespace, call.Spec.Scope,
		func(s *v1alpha1.ToolScope) bool { return s.Spec.Workspace != nil })
	if scope == nil || err != nil {
		return nil, nil, err
	}
	return scope, scope.Spec.Workspace, nil
}

// ensureClaim returns the session's claim, creating it when it does not exist. A claim of
// that name that is not the session's (another session whose name hashes alike, or an
// object someone else made) is an error: its files are not this session's. The claim is
// read from the API server, not the cache: the credentials the session's previous call
// recorded on it a moment ago must be seen (workspace_credentials.go).
func (c *Claims) ensureClaim(ctx context.Context, call *v1alpha1.ToolCall, scope *v1alpha1.ToolScope, decl *v1alpha1.Workspace) (*corev1.PersistentVolumeClaim, error) {
	want := buildClaim(call, scope, decl, c.Options)
	if err := controllerutil.SetOwnerReference(scope, want, c.Scheme); err != nil {
		return nil, err
	}
	got := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKeyFromObject(want)
	err := c.APIReader.Get(ctx, key, got)
	if apierrors.IsNotFound(err) {
		if err = c.Client.Create(ctx, want); err == nil {
			ctrl.LoggerFrom(ctx).Info("created session workspace", "claim", want.Name, "scope", scope.Name)
			return want, nil
		}
		if apierrors.IsAlreadyExists(err) {
			err = c.APIReader.Get(ctx, key, got)
		}
	}
	if err != nil {
		return nil, err
	}
	if got.Labels[podcontract.LabelManagedBy] != podcontract.ManagedByValue ||
		got.Labels[podcontract.LabelWorkspaceScope] != scope.Name ||
		got.Annotations[podcontract.AnnotationWorkspaceSession] != call.Spec.Session ||
		got.Annotations[podcontract.AnnotationWorkspaceRequester] != call.Spec.Requester {
		return nil, errForeignClaim{name: got.Name}
	}
	return got, nil
}

type errForeignClaim struct{ name string }

func (e errForeignClaim) Error() string {
	return "the PersistentVolumeClaim " + e.name + " is not this session's workspace"
}

// buildClaim is the session's claim as the declaration asks for it (the owner reference
// is set by the caller: it needs the scheme), with the record of the credentials the
// creating call adds, so that the session's first call needs no patch.
func buildClaim(call *v1alpha1.ToolCall, scope *v1alpha1.ToolScope, decl *v1alpha1.Workspace, opts Options) *corev1.PersistentVolumeClaim {
	size := resource.MustParse(defaultWorkspaceSize)
	if decl.Size != nil && decl.Size.Sign() > 0 {
		size = decl.Size.DeepCopy()
	}
	mode := corev1.ReadWriteOnce
	if decl.AccessMode != "" {
		mode = corev1.PersistentVolumeAccessMode(decl.AccessMode)
	}
	var class *string
	switch {
	case decl.StorageClassName != nil && *decl.StorageClassName != "":
		class = decl.StorageClassName
	case opts.StorageClass != "":
		class = &opts.StorageClass
	}
	annotations := map[string]string{
		podcontract.AnnotationWorkspaceSession:   call.Spec.Session,
		podcontract.AnnotationWorkspaceRequester: call.Spec.Requester,
		podcontract.AnnotationWorkspaceRetention: workspaceRetention(decl).String(),
	}
	// Past the bound the claim is created without: claimCredentials then refuses the call.
	if creds := workspaceCredentials(snapshotSpec(call)); len(creds) > 0 && len(creds) <= podcontract.MaxWorkspaceCredentials {
		annotations[podcontract.AnnotationWorkspaceCredentials] = encodeCredentials(creds)
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ClaimName(scope.Name, call.Spec.Requester, call.Spec.Session),
			Namespace: call.Namespace,
			Labels: map[string]string{
				podcontract.LabelManagedBy:        podcontract.ManagedByValue,
				podcontract.LabelWorkspaceScope:   scope.Name,
				podcontract.LabelWorkspaceSession: SessionLabelValue(call.Spec.Session),
			},
			Annotations: annotations,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{mode},
			StorageClassName: class,
			VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}

func workspaceRetention(decl *v1alpha1.Workspace) time.Duration {
	if decl.Retention == nil || decl.Retention.Duration <= 0 {
		return defaultWorkspaceRetention
	}
	return decl.Retention.Duration
}

// Unbound turns the end of an attempt whose session claim never bound into
// WorkspaceUnbound: a Pod whose claim is unbound is never scheduled, so the body did not
// run whatever the outcome's guess (the Job controller deletes such a Pod at the Job's
// deadline, and a Job failed without a Pod reads as started), and saying DeadlineExceeded
// would send whoever reads it to the wrong place. A claim that was ever bound stays Bound
// (or Lost): then the outcome stands, as it does when the runner vouched for a run or the
// claim cannot be read.
func (c *Claims) Unbound(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (executor.Step, bool) {
	if o.Report != nil || Access(call.Status.Tool.Spec) == "" || call.Spec.Session == "" {
		return executor.Step{}, false
	}
	scope, decl, err := c.workspaceDeclaration(ctx, call)
	if err != nil || decl == nil {
		return executor.Step{}, false
	}
	name := ClaimName(scope.Name, call.Spec.Requester, call.Spec.Session)
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: name}, pvc); err != nil && !apierrors.IsNotFound(err) {
		return executor.Step{}, false
	}
	if pvc.Status.Phase == corev1.ClaimBound || pvc.Status.Phase == corev1.ClaimLost {
		return executor.Step{}, false
	}
	class := "the cluster's default"
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	detail := "the PersistentVolumeClaim " + name + " (storage class " + class + ") was not bound before the attempt's deadline"
	msg := "the call was not run: its session workspace could not be provisioned in time"
	return workspaceRefusal(v1alpha1.ReasonWorkspaceUnbound, detail, msg), true
}
