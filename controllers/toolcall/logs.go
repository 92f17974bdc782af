package toolcall

import (
	"context"
	"fmt"
	"io"

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

// TailLog implements LogReader with bounded tailLines and limitBytes: it never holds more
// than limitBytes of the response, whatever the server sends (pods/log may return
// "slightly more" than limitBytes). The caller bounds its time with ctx.
func (r PodLogReader) TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error) {
	if tailLines <= 0 || limitBytes <= 0 {
		return nil, fmt.Errorf("unbounded log read (%d lines, %d bytes)", tailLines, limitBytes)
	}
	opts := &corev1.PodLogOptions{Container: container, TailLines: &tailLines, LimitBytes: &limitBytes}
	rc, err := r.Clientset.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limitBytes))
}
