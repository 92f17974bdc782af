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
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The faults of the real-cluster chaos run.
type faultKind string

const (
	// faultDelete deletes the leader's Pod the normal way (SIGTERM, the lease released).
	faultDelete faultKind = "delete"
	// faultForce deletes it with --grace-period=0 --force: the Pod object goes at once, the
	// kubelet stops the container, and the Deployment starts the next Pod meanwhile.
	faultForce faultKind = "force-delete"
	// faultKill SIGKILLs the leader's manager container through containerd (the Pod stays,
	// the kubelet restarts the container): nothing shuts down, the lease is not released.
	faultKill faultKind = "sigkill"
	// faultAPIServer restarts kube-apiserver with hack/cluster.sh restart.
	faultAPIServer faultKind = "apiserver-restart"
)

// fault is one injected fault and what followed it.
type fault struct {
	Kind faultKind
	At   time.Time
	// Done: the injection returned (for the API server: ready again).
	Done time.Time
	// Holder is the lease holder before the fault, Pod the operator Pod faulted (the
	// leader's). Takeover is when the next leader (another holder, or for the API server
	// restart any holder renewing) was first seen, NewHolder who it is and Acquired the
	// Lease's acquireTime it wrote. Progress is when the first of the run's calls was seen
	// changed after the takeover: the new leader at work.
	Holder string
	Pod    string
	// Standbys are the other live operator Pods just before the fault.
	Standbys  []string
	Takeover  time.Time
	NewHolder string
	Acquired  time.Time
	Progress  time.Time
	Err       error
}

// takeover is how long the operator was without a leader: from the fault (for the API
// server restart: from the API server ready again) to the next leader seen; -1 if none.
func (f fault) takeover() time.Duration {
	if f.Takeover.IsZero() {
		return -1
	}
	if f.Kind == faultAPIServer {
		return f.Takeover.Sub(f.Done)
	}
	return f.Takeover.Sub(f.At)
}

// deleteLeaderPod deletes the operator Pod holding the Lease (the other replica stands
// by); force: grace period 0. It returns the Pod's name.
func deleteLeaderPod(ctx context.Context, force bool) (string, error) {
	pod, err := leaderPod(ctx)
	if err != nil {
		return "", err
	}
	var opts []client.DeleteOption
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	return pod.Name, client.IgnoreNotFound(admin.Delete(ctx, pod, opts...))
}

// killLeaderContainer SIGKILLs the leader's manager container through the cluster's
// containerd, by container id (from the Pod status): only the leader's process dies, the
// Lease is not released, the kubelet restarts the container. It returns the Pod's name.
func killLeaderContainer(ctx context.Context) (string, error) {
	pod, err := leaderPod(ctx)
	if err != nil {
		return "", err
	}
	for _, cs := range pod.Status.ContainerStatuses {
		id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
		if !ok || cs.State.Running == nil {
			continue
		}
		sock := filepath.Join(root, ".cluster", "run", "containerd.sock")
		out, err := exec.CommandContext(ctx, "ctr", "-a", sock, "-n", "k8s.io",
			"tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
		if err != nil {
			return pod.Name, fmt.Errorf("ctr tasks kill %s: %w: %s", id, err, out)
		}
		return pod.Name, nil
	}
	return pod.Name, fmt.Errorf("the leader %s has no running container to kill", pod.Name)
}

// restartAPIServer runs hack/cluster.sh restart kube-apiserver and returns its output.
func restartAPIServer(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "cluster.sh"), "restart", "kube-apiserver")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// inject runs one fault and records it; the caller waits for the takeover.
func inject(ctx context.Context, rec *recorder, kind faultKind) fault {
	f := fault{Kind: kind, Holder: rec.leaseHolder()}
	if pods, err := operatorPods(ctx); err == nil {
		for _, p := range pods {
			if p.Name != podOfHolder(f.Holder) {
				f.Standbys = append(f.Standbys, p.Name)
			}
		}
	}
	f.At = time.Now()
	switch kind {
	case faultDelete:
		f.Pod, f.Err = deleteLeaderPod(ctx, false)
	case faultForce:
		f.Pod, f.Err = deleteLeaderPod(ctx, true)
	case faultKill:
		f.Pod, f.Err = killLeaderContainer(ctx)
	case faultAPIServer:
		var out string
		out, f.Err = restartAPIServer(ctx)
		if f.Err != nil {
			f.Err = fmt.Errorf("%w: %s", f.Err, out)
		}
		f.Holder = "" // the leader may keep its lease: any renewal after it counts
	}
	f.Done = time.Now()
	return f
}

// waitTakeover waits (up to limit) for a leader after the fault and records when.
func waitTakeover(ctx context.Context, rec *recorder, f *fault, limit time.Duration) {
	since := f.At
	if f.Kind == faultAPIServer {
		since = f.Done
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if l, ok := rec.takeoverAfter(since, f.Holder); ok {
			f.Takeover, f.NewHolder, f.Acquired = l.At, l.Holder, l.Acquire
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
