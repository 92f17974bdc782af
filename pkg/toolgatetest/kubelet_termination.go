package toolgatetest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Graceful deletion in envtest: the API server keeps a deleted Pod that is bound to a node
// (spec.nodeName; this Kubelet's Pods are) and not yet ended until its kubelet confirms that
// its containers stopped, and envtest has no kubelet. The Kubelet plays that part for the
// Pods of toolgate's Jobs, session Pods and session pool Pods: a deleted Pod's body gets SIGTERM and, as most bodies do, stops at
// once (the Pod is deleted with grace period 0, as a kubelet does once the containers are
// gone). A body scripted with Outcome.IgnoreSIGTERM traps the signal and runs on: its Pod
// stays, being deleted, its container running, until EndGrace plays the end of its grace
// period (SIGKILL) — or for ever, as a Pod on a node that stopped reporting stays.

func (k *Kubelet) setupTermination(mgr ctrl.Manager) error {
	jobPod := predicate.NewPredicateFuncs(func(o client.Object) bool {
		owner := metav1.GetControllerOf(o)
		return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue && owner != nil && owner.Kind == "Job" ||
			sessionOrSessionPool(o)
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}, builder.WithPredicates(jobPod)).
		Named("simulated-kubelet-termination").
		Complete(reconcileFunc(k.stopDeleted))
}

// stopDeleted stops a deleted Pod's body, unless it ignores SIGTERM.
func (k *Kubelet) stopDeleted(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := k.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.DeletionTimestamp.IsZero() || graceGone(pod) || k.ignoresSIGTERM(pod) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, k.stopContainers(ctx, pod, 143)
}

// noteSIGTERM remembers that the Pod's body, as played (o, after its workspace body and
// credentials), ignores SIGTERM.
func (k *Kubelet) noteSIGTERM(pod *corev1.Pod, o Outcome) {
	if !o.IgnoreSIGTERM {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.trapsSIGTERM == nil {
		k.trapsSIGTERM = map[types.UID]bool{}
	}
	k.trapsSIGTERM[pod.UID] = true
}

func (k *Kubelet) ignoresSIGTERM(pod *corev1.Pod) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.trapsSIGTERM[pod.UID]
}

// EndGrace plays the end of a deleted Pod's grace period, for a body that ignored SIGTERM
// (Outcome.IgnoreSIGTERM): the kubelet kills its containers (SIGKILL), reports them
// terminated, and the Pod goes. The Pod must be being deleted.
func (k *Kubelet) EndGrace(ctx context.Context, namespace, name string) error {
	pod := &corev1.Pod{}
	if err := k.reader().Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
		return err
	}
	if pod.DeletionTimestamp.IsZero() {
		return fmt.Errorf("pod %s/%s is not being deleted: its grace period has not begun", namespace, name)
	}
	return k.stopContainers(ctx, pod, 137)
}

// stopContainers reports the Pod's containers ended (exit code: 143 for SIGTERM, 137 for
// SIGKILL), then deletes it with grace period 0, as a kubelet does: a Pod the operator sees
// with no grace left has its containers terminated already.
func (k *Kubelet) stopContainers(ctx context.Context, pod *corev1.Pod, exitCode int32) error {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodFailed
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: podcontract.ToolContainerName, Started: ptr.To(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error", FinishedAt: now}}}}
	if err := k.Status().Update(ctx, pod); client.IgnoreNotFound(err) != nil {
		return err
	}
	return k.deleteNow(ctx, pod)
}

// deleteNow is the kubelet's last word on a Pod whose containers stopped: grace period 0.
func (k *Kubelet) deleteNow(ctx context.Context, pod *corev1.Pod) error {
	uid := pod.UID
	return client.IgnoreNotFound(k.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid}))
}

// graceGone: the Pod was deleted with grace period 0 already (force-deleted).
func graceGone(pod *corev1.Pod) bool {
	return pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}
