package podspec

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// signerResources: 10m CPU and 16 MiB requested; at most half a CPU, and 32 MiB plus eight
// times the output bound (the kept output, its redaction, the frame's base64 and gzip); the
// ephemeral-storage limit of a tool container, for its log (the body's stderr, redacted).
func signerResources(opts Options, maxOut int64) corev1.ResourceRequirements {
	storage := resource.MustParse("64Mi")
	if q, ok := opts.DefaultResources.Limits[corev1.ResourceEphemeralStorage]; ok {
		storage = q
	}
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("10m"),
			corev1.ResourceMemory:           resource.MustParse("16Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("500m"),
			corev1.ResourceMemory:           *resource.NewQuantity(32<<20+8*maxOut, resource.BinarySI),
			corev1.ResourceEphemeralStorage: storage,
		},
	}
}

// withDefaults fills every request and limit the tool left out, so that a tool Pod always
// has both; a request the tool set above the default limit raises that limit to match.
func withDefaults(set, defaults corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for name, q := range defaults.Requests {
		out.Requests[name] = q
	}
	for name, q := range defaults.Limits {
		out.Limits[name] = q
	}
	for name, q := range set.Limits {
		out.Limits[name] = q
	}
	for name, q := range set.Requests {
		out.Requests[name] = q
		if limit, ok := out.Limits[name]; ok && q.Cmp(limit) > 0 {
			out.Limits[name] = q
		}
	}
	for name, req := range out.Requests {
		if limit, ok := out.Limits[name]; ok && req.Cmp(limit) > 0 {
			out.Requests[name] = limit
		}
	}
	return out
}
