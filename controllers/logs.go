package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// LogReader reads the end of a container's log. The operator uses it only for results too
// large for the termination message (the runner writes them to its log, framed).
type LogReader interface {
	TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error)
}

// PodLogReader reads logs through the API server's pods/log subresource.
type PodLogReader struct {
	Clientset kubernetes.Interface
}

// TailLog implements LogReader with bounded tailLines and limitBytes.
func (r PodLogReader) TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error) {
	opts := &corev1.PodLogOptions{Container: container}
	if tailLines > 0 {
		opts.TailLines = &tailLines
	}
	if limitBytes > 0 {
		opts.LimitBytes = &limitBytes
	}
	return r.Clientset.CoreV1().Pods(namespace).GetLogs(pod, opts).DoRaw(ctx)
}
