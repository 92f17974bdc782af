package podspec

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// ToolContainerStatus is the status of the Pod's tool container (nil: none reported yet).
func ToolContainerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	return ContainerStatus(pod, podcontract.ToolContainerName)
}

// ContainerStatus is the status of the Pod's container of that name (nil: none reported yet).
func ContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
