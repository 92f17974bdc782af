package warmpool

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

// PodSpecMismatch says how a pool Pod's live spec differs from the spec its pool builds
// (warmPodSpec), "" when it does not: labels and owners say which pool a Pod is in, but
// anyone who can patch Pods can write them, so only the spec the kubelet runs says which
// body it is. It compares what decides the body and its sandbox — containers (image,
// command, args, working directory, environment with its references, stdin, resources,
// security context, mounts), init containers alike, the Pod's security context, runtime
// class, volumes, host namespaces, token and service links — semantically (quantities),
// and no ephemeral container may have been added. Fields the API server or admission
// fill in (scheduling, service account, defaults) are not compared.
func PodSpecMismatch(live, want *corev1.PodSpec) string {
	if len(live.EphemeralContainers) > 0 {
		return "an ephemeral container was added"
	}
	if why := containersMismatch("container", live.Containers, want.Containers); why != "" {
		return why
	}
	if why := containersMismatch("init container", live.InitContainers, want.InitContainers); why != "" {
		return why
	}
	checks := []struct {
		field      string
		live, want any
	}{
		{"securityContext", live.SecurityContext, want.SecurityContext},
		{"runtimeClassName", ptr.Deref(live.RuntimeClassName, ""), ptr.Deref(want.RuntimeClassName, "")},
		{"volumes", live.Volumes, want.Volumes},
		{"hostNetwork", live.HostNetwork, want.HostNetwork},
		{"hostPID", live.HostPID, want.HostPID},
		{"hostIPC", live.HostIPC, want.HostIPC},
		{"shareProcessNamespace", ptr.Deref(live.ShareProcessNamespace, false), ptr.Deref(want.ShareProcessNamespace, false)},
		{"automountServiceAccountToken", live.AutomountServiceAccountToken, want.AutomountServiceAccountToken},
		{"enableServiceLinks", live.EnableServiceLinks, want.EnableServiceLinks},
	}
	for _, c := range checks {
		if !apiequality.Semantic.DeepEqual(c.live, c.want) {
			return c.field + " differs"
		}
	}
	return ""
}

// containersMismatch says how the live containers of a kind differ from want ("" when not).
func containersMismatch(kind string, live, want []corev1.Container) string {
	if len(live) != len(want) {
		return fmt.Sprintf("%d %ss, want %d", len(live), kind, len(want))
	}
	for i := range want {
		l, w := &live[i], &want[i]
		checks := []struct {
			field      string
			live, want any
		}{
			{"name", l.Name, w.Name},
			{"image", l.Image, w.Image},
			{"command", l.Command, w.Command},
			{"args", l.Args, w.Args},
			{"workingDir", l.WorkingDir, w.WorkingDir},
			{"env", l.Env, w.Env},
			{"envFrom", l.EnvFrom, w.EnvFrom},
			{"stdin", [3]bool{l.Stdin, l.StdinOnce, l.TTY}, [3]bool{w.Stdin, w.StdinOnce, w.TTY}},
			{"resources", l.Resources, w.Resources},
			{"securityContext", l.SecurityContext, w.SecurityContext},
			{"volumeMounts", l.VolumeMounts, w.VolumeMounts},
		}
		for _, c := range checks {
			if !apiequality.Semantic.DeepEqual(c.live, c.want) {
				return fmt.Sprintf("%s %s: %s differs", kind, w.Name, c.field)
			}
		}
	}
	return ""
}
