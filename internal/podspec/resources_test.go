package podspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

func TestWithDefaults(t *testing.T) {
	defaults := DefaultOptions().DefaultResources
	set := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	got := withDefaults(set, defaults)
	if q := got.Limits[corev1.ResourceMemory]; q.Cmp(resource.MustParse("512Mi")) != 0 {
		t.Errorf("memory limit = %s, want raised to the request", q.String())
	}
	if q := got.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("50m")) != 0 {
		t.Errorf("cpu request = %s, want default", q.String())
	}
	small := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Mi")}}
	got = withDefaults(small, defaults)
	if q := got.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("8Mi")) != 0 {
		t.Errorf("memory request = %s, want lowered to the limit", q.String())
	}
}

func TestBuildJobBoundsNodeDisk(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name         string
		mut          func(*toolgatev1alpha1.ToolSpec)
		wantSize     string // sizeLimit of every emptyDir; "" means no volumes
		wantStorage  string // ephemeral-storage limit of the tool container
		wantRequests string // ephemeral-storage request of the tool container
	}{
		{"operator defaults", nil, "256Mi", "1Gi", "64Mi"},
		{"tool scratch size", func(s *toolgatev1alpha1.ToolSpec) { s.Sandbox.ScratchSizeLimit = ptr.To(q("2Gi")) }, "2Gi", "1Gi", "64Mi"},
		{"zero scratch size falls back", func(s *toolgatev1alpha1.ToolSpec) { s.Sandbox.ScratchSizeLimit = ptr.To(q("0")) }, "256Mi", "1Gi", "64Mi"},
		{"tool storage limit", func(s *toolgatev1alpha1.ToolSpec) {
			s.Body.Resources.Limits = corev1.ResourceList{corev1.ResourceEphemeralStorage: q("4Gi")}
		}, "256Mi", "4Gi", "64Mi"},
		{"tool storage request above default limit", func(s *toolgatev1alpha1.ToolSpec) {
			s.Body.Resources.Requests = corev1.ResourceList{corev1.ResourceEphemeralStorage: q("3Gi")}
		}, "256Mi", "3Gi", "3Gi"},
		{"scratch None", scratchNone, "", "1Gi", "64Mi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := BuildJob(testJobInput(tc.mut), DefaultOptions()).Spec.Template.Spec
			if tc.wantSize == "" && len(scratchVolumes(pod)) != 0 {
				t.Fatalf("volumes = %+v, want none", pod.Volumes)
			}
			if tc.wantSize != "" && len(scratchVolumes(pod)) != 2 {
				t.Fatalf("volumes = %+v, want 2", pod.Volumes)
			}
			for _, v := range scratchVolumes(pod) {
				if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(q(tc.wantSize)) != 0 {
					t.Errorf("volume %s: emptyDir %+v, want sizeLimit %s", v.Name, v.EmptyDir, tc.wantSize)
				}
			}
			res := toolIn(pod).Resources
			if got := res.Limits[corev1.ResourceEphemeralStorage]; got.Cmp(q(tc.wantStorage)) != 0 {
				t.Errorf("ephemeral-storage limit = %s, want %s", got.String(), tc.wantStorage)
			}
			if got := res.Requests[corev1.ResourceEphemeralStorage]; got.Cmp(q(tc.wantRequests)) != 0 {
				t.Errorf("ephemeral-storage request = %s, want %s", got.String(), tc.wantRequests)
			}
			for _, c := range pod.InitContainers {
				if _, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; !ok {
					t.Errorf("init container %s has no ephemeral-storage limit", c.Name)
				}
			}
		})
	}
}

func TestBuildJobScratchSizeLimitNotShared(t *testing.T) {
	opts := DefaultOptions()
	pod := BuildJob(testJobInput(nil), opts).Spec.Template.Spec
	pod.Volumes[0].EmptyDir.SizeLimit.Set(1)
	if pod.Volumes[1].EmptyDir.SizeLimit.Cmp(resource.MustParse("256Mi")) != 0 || opts.ScratchSizeLimit.Cmp(resource.MustParse("256Mi")) != 0 {
		t.Fatal("emptyDirs share one sizeLimit quantity with each other or the options")
	}
}
