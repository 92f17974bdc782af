package warmpool

import (
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/feature/all"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// defaultMaxIdle is warmPool.maxIdle's default (the CRD's).
	defaultMaxIdle = 10 * time.Minute
)

// Supports is the warm executor's support table (its Supports): a pool Pod is started
// before its call is known, so it can hold nothing made for the call: not the session's
// workspace claim, not a Secret's value (a pool Pod must never hold one before its call),
// not the attempt's egress grant. Its RuntimeClass is the tool's, as a cold Pod's.
var Supports = executor.FeatureSet{feature.RuntimeClass}

// Unsupported is the first feature spec uses that the warm executor does not support ("":
// none). Such a tool's calls run cold and its pool keeps no Pods (Size); the API refuses
// a pool for the features it can see (CEL, tied to this table by a test).
func Unsupported(spec *toolgatev1alpha1.ToolSpec) executor.FeatureName {
	return Supports.Missing(all.Used(spec))
}

// Declared is the pool size a Tool spec declares (0: none).
func Declared(spec *toolgatev1alpha1.ToolSpec) int {
	if spec == nil || spec.WarmPool == nil || spec.WarmPool.Size <= 0 {
		return 0
	}
	return int(spec.WarmPool.Size)
}

// Size is the pool kept for a Tool spec: its declared size, or 0 when the tool uses a
// feature the warm executor does not support (no call could claim its Pods).
func Size(spec *toolgatev1alpha1.ToolSpec) int {
	if Unsupported(spec) != "" {
		return 0
	}
	return Declared(spec)
}

// warmMaxIdle is how long a pool Pod may wait for a call before it is replaced.
func warmMaxIdle(spec *toolgatev1alpha1.ToolSpec) time.Duration {
	if spec.WarmPool == nil || spec.WarmPool.MaxIdle == nil || spec.WarmPool.MaxIdle.Duration <= 0 {
		return defaultMaxIdle
	}
	return spec.WarmPool.MaxIdle.Duration
}

// BuildPod is one Pod of a pool, in the pool's namespace (the owner reference is set
// by the caller). Nothing in it depends on the namespace: a ClusterTool's Pods are the same
// in each, as its cold Pods are.
func BuildPod(p Pool, opts podspec.Options) *corev1.Pod {
	name := p.name()
	prefix := strings.TrimRight(truncate(p.owner.GetName(), 40), ".-") + "-warm-"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix,
			Namespace:    p.namespace,
			Labels:       p.labels(podspec.WarmTemplateDigest(p.spec, opts)),
			Annotations:  map[string]string{podcontract.AnnotationTool: name},
		},
		Spec: podspec.WarmPodSpec(p.spec, opts),
	}
}

// labels are the labels of a Pod of p of template: the pool's, the template, the tool's
// and its network label (NetworkPolicies select it).
func (p Pool) labels(template string) map[string]string {
	return map[string]string{
		podcontract.LabelManagedBy: podcontract.ManagedByValue,
		podcontract.LabelPool:      podspec.ToolLabelValue(p.owner.GetName()),
		podcontract.LabelTemplate:  template,
		podcontract.LabelTool:      podspec.ToolLabelValue(p.name()),
		podcontract.LabelNetwork:   podspec.NetworkLabel(p.spec.Sandbox.Network),
	}
}

// truncate is s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ClaimDeadline is the activeDeadlineSeconds a claimed Pod gets: the seconds it has
// already run (counted, as the kubelet counts, from status.startTime) plus the call's
// timeout, so the kubelet kills an overrunning body exactly as it would a cold Pod's.
func ClaimDeadline(pod *corev1.Pod, spec *toolgatev1alpha1.ToolSpec, now time.Time) int64 {
	ran := int64(0)
	if pod.Status.StartTime != nil {
		ran = int64(math.Ceil(now.Sub(pod.Status.StartTime.Time).Seconds()))
	}
	return max(ran, 0) + podspec.TimeoutSeconds(spec)
}

// PodReady reports the Pod's Ready condition.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
