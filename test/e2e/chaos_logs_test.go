/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// operatorLogs follows the log of every operator container the run sees (each Pod, each
// restart of its container) into one file, each line prefixed with the Pod's name: the
// run deletes the Pods whose logs explain a violation, and their logs go with them.
type operatorLogs struct {
	cs  kubernetes.Interface
	out io.Writer

	mu       sync.Mutex
	followed map[string]bool // pod uid/restartCount
}

func newOperatorLogs(cfg *rest.Config, out io.Writer) (*operatorLogs, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &operatorLogs{cs: cs, out: out, followed: map[string]bool{}}, nil
}

// run polls the operator's Pods every second until ctx ends and follows each new container.
func (l *operatorLogs) run(ctx context.Context) {
	for ctx.Err() == nil {
		pods, err := l.cs.CoreV1().Pods(systemNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + release + ",app.kubernetes.io/component=manager"})
		if err == nil {
			for i := range pods.Items {
				l.maybeFollow(ctx, &pods.Items[i])
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (l *operatorLogs) maybeFollow(ctx context.Context, pod *corev1.Pod) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			continue
		}
		key := fmt.Sprintf("%s/%d", pod.UID, cs.RestartCount)
		l.mu.Lock()
		seen := l.followed[key]
		l.followed[key] = true
		l.mu.Unlock()
		if !seen {
			go l.follow(ctx, pod.Name, cs.Name, cs.RestartCount, cs.State.Running.StartedAt.Time)
		}
	}
}

// follow streams one container's log; a stream cut by an API server restart is opened
// again from the last line's time (a few lines may repeat).
func (l *operatorLogs) follow(ctx context.Context, pod, container string, restarts int32, since time.Time) {
	for ctx.Err() == nil {
		opts := &corev1.PodLogOptions{Container: container, Follow: true, Timestamps: true}
		if !since.IsZero() {
			opts.SinceTime = &metav1.Time{Time: since}
		}
		stream, err := l.cs.CoreV1().Pods(systemNS).GetLogs(pod, opts).Stream(ctx)
		if err != nil {
			if _, getErr := l.cs.CoreV1().Pods(systemNS).Get(ctx, pod, metav1.GetOptions{}); apierrors.IsNotFound(getErr) {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if stamp, _, ok := strings.Cut(line, " "); ok {
				if ts, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
					since = ts
				}
			}
			l.mu.Lock()
			_, _ = fmt.Fprintf(l.out, "%s %s\n", pod, line)
			l.mu.Unlock()
		}
		_ = stream.Close()
		// The stream ends when the container exits (then the Pod's next container, if any,
		// is followed on its own) or when the connection broke.
		p, err := l.cs.CoreV1().Pods(systemNS).Get(ctx, pod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && !stillRunning(p, container, restarts)) {
			return
		}
	}
}

// stillRunning: the container the stream was following has not exited (same instance:
// a restarted container is followed under its own key).
func stillRunning(pod *corev1.Pod, container string, restarts int32) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Running != nil && cs.RestartCount == restarts
		}
	}
	return false
}
