package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// defaultMaxIdle is warmPool.maxIdle's default (the CRD's).
	defaultMaxIdle = 10 * time.Minute
)

// warmPoolSize is the pool a Tool spec asks for (0: none).
func warmPoolSize(spec *toolgatev1alpha1.ToolSpec) int {
	if spec == nil || spec.WarmPool == nil || spec.WarmPool.Size <= 0 {
		return 0
	}
	if hasCredentials(spec.Body) {
		return 0 // the API refuses it (CEL): a pool Pod must never hold a Secret value before its call
	}
	return int(spec.WarmPool.Size)
}

func warmMaxIdle(spec *toolgatev1alpha1.ToolSpec) time.Duration {
	if spec.WarmPool == nil || spec.WarmPool.MaxIdle == nil || spec.WarmPool.MaxIdle.Duration <= 0 {
		return defaultMaxIdle
	}
	return spec.WarmPool.MaxIdle.Duration
}

// warmPodSpec is the cold Pod's spec (buildPodSpec: same sandbox, security context,
// resources, runtime class, volumes and the same two containers) for a Pod started before
// its call: no arguments and no key in it (they come in the Handover, on the signer's
// stdin), the signer in warm mode with stdin open for one attach, and no
// activeDeadlineSeconds yet (set at claim to the time already run plus the call's timeout:
// it may be set or lowered on a running Pod, never raised).
func warmPodSpec(spec *toolgatev1alpha1.ToolSpec, opts JobOptions) corev1.PodSpec {
	ps := buildPodSpec(JobInput{Call: &toolgatev1alpha1.ToolCall{}, Tool: spec}, opts, 0)
	ps.ActiveDeadlineSeconds = nil
	signer := signerOf(&ps)
	signer.Stdin, signer.StdinOnce = true, true
	signer.Env = []corev1.EnvVar{
		literalEnv(podcontract.EnvWarm, podcontract.WarmOn),
		literalEnv(podcontract.EnvArgsFile, argsFileFor(spec.Sandbox.Scratch)),
		literalEnv(podcontract.EnvMaxOutput, strconv.FormatInt(maxOutput(spec), 10)),
		// A Handover is signed for this Pod's uid (frame.SignHandover).
		{Name: podcontract.EnvPodUID, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}}},
		handoverKeysEnv(),
	}
	return ps
}

// warmTemplateDigest identifies the Pod a spec gives: 32 hex of the SHA-256 of the Pod
// spec's JSON (no key is in it: the master comes from the namespace's Secret). A Tool
// edit, or an operator started with other Pod settings, gives another digest; its old Pods
// are replaced and never claimed.
func warmTemplateDigest(spec *toolgatev1alpha1.ToolSpec, opts JobOptions) string {
	b, err := json.Marshal(warmPodSpec(spec, opts))
	if err != nil {
		return "" // a PodSpec always marshals; an empty digest matches no Pod
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// buildWarmPod is one Pod of a pool, in the pool's namespace (the owner reference is set
// by the caller). Nothing in it depends on the namespace: a ClusterTool's Pods are the same
// in each, as its cold Pods are.
func buildWarmPod(p poolRef, opts JobOptions) *corev1.Pod {
	name := p.name()
	prefix := strings.TrimRight(truncate(p.owner.GetName(), 40), ".-") + "-warm-"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix,
			Namespace:    p.namespace,
			Labels: map[string]string{
				podcontract.LabelManagedBy: podcontract.ManagedByValue,
				podcontract.LabelPool:      ToolLabelValue(p.owner.GetName()),
				podcontract.LabelTemplate:  warmTemplateDigest(p.spec, opts),
				podcontract.LabelTool:      ToolLabelValue(name),
				podcontract.LabelNetwork:   networkLabel(p.spec.Sandbox.Network),
			},
			Annotations: map[string]string{podcontract.AnnotationTool: name},
		},
		Spec: warmPodSpec(p.spec, opts),
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// claimDeadline is the activeDeadlineSeconds a claimed Pod gets: the seconds it has
// already run (counted, as the kubelet counts, from status.startTime) plus the call's
// timeout, so the kubelet kills an overrunning body exactly as it would a cold Pod's.
func claimDeadline(pod *corev1.Pod, spec *toolgatev1alpha1.ToolSpec, now time.Time) int64 {
	ran := int64(0)
	if pod.Status.StartTime != nil {
		ran = int64(math.Ceil(now.Sub(pod.Status.StartTime.Time).Seconds()))
	}
	return max(ran, 0) + timeoutSeconds(spec)
}

// podReady reports the Pod's Ready condition.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
