package jobexec

import (
	"context"
	"encoding/base64"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// attemptKeySecret is the Secret that hands one attempt's frame key (and nothing else) to
// its Pod's signer: a Pod never holds the namespace's master, so a body or a person who
// reads everything in a Pod can sign for that attempt at most. Owned by the call (the
// garbage collector's backstop); the operator deletes it once the attempt's end is recorded.
func attemptKeySecret(call *v1alpha1.ToolCall, jobName string, attempt int32, master []byte) *corev1.Secret {
	key := frame.AttemptKey(master, string(call.UID), int(attempt))
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      podcontract.AttemptKeySecret(jobName),
			Namespace: call.Namespace,
			Labels: map[string]string{
				podcontract.LabelManagedBy: podcontract.ManagedByValue,
				podcontract.LabelCall:      podspec.CallLabelValue(call.Name),
				podcontract.LabelAttempt:   strconv.Itoa(int(attempt)),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{podcontract.FrameKeySecretKey: []byte(base64.RawURLEncoding.EncodeToString(key))},
	}
}

// ensureAttemptKey creates the attempt's key Secret before its Job. One that exists already
// is left as it is: the operator's own from before a restart, or one a tenant planted under
// the name — which gains nothing, since the operator verifies frames with the keys it
// derives itself, never with what a Secret holds: a wrong key makes the frame unreadable,
// never a success.
func (j *Executor) ensureAttemptKey(ctx context.Context, call *v1alpha1.ToolCall, jobName string, attempt int32, master []byte) error {
	secret := attemptKeySecret(call, jobName, attempt, master)
	if err := controllerutil.SetControllerReference(call, secret, j.Scheme); err != nil {
		return err
	}
	if err := j.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// deleteAttemptKey deletes an ended attempt's key Secret (best effort: the call owns it) —
// only the one the operator made for this call (controlled by it), under a UID precondition:
// a Secret of someone else's that merely has the name (a call named to match it) is left.
// The operator holds no Secret informer: one read, then the delete.
func (j *Executor) deleteAttemptKey(ctx context.Context, owner types.UID, namespace, jobName string) {
	secret := &corev1.Secret{}
	err := j.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: podcontract.AttemptKeySecret(jobName)}, secret)
	if err != nil || !controlledByUID(secret, owner) {
		return
	}
	uid := secret.UID
	if err := j.Delete(ctx, secret, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		ctrl.LoggerFrom(ctx).Error(err, "could not delete an attempt's key Secret", "secret", secret.Name)
	}
}

// controlledByUID reports whether obj's controller is the object with uid owner.
func controlledByUID(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner
}
