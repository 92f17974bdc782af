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

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The faults of the real-cluster chaos run.
type faultKind string

const (
	// faultDelete deletes the operator Pod(s) the normal way (SIGTERM, the lease released).
	faultDelete faultKind = "delete"
	// faultForce deletes them with --grace-period=0 --force: the Pod object goes at once, the
	// kubelet kills the container, and the Deployment starts the next Pod meanwhile.
	faultForce faultKind = "force-delete"
	// faultKill SIGKILLs the manager container through containerd (the Pod stays, the
	// kubelet restarts the container): nothing shuts down, the lease is not released.
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
	// Holder is the lease holder before the fault; Takeover when the next leader (another
	// holder, or for the API server restart any holder renewing) was first seen.
	Holder   string
	Takeover time.Time
	Err      error
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

// operatorPods are the operator's Pods not being deleted.
func operatorPods(ctx context.Context) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(systemNS),
		client.MatchingLabels{"app.kubernetes.io/name": release}); err != nil {
		return nil, err
	}
	live := pods.Items[:0]
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live, nil
}

// deleteOperatorPods deletes every live operator Pod; force: grace period 0.
func deleteOperatorPods(ctx context.Context, force bool) error {
	pods, err := operatorPods(ctx)
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no live operator Pod to delete")
	}
	var opts []client.DeleteOption
	if force {
		opts = append(opts, client.GracePeriodSeconds(0))
	}
	for i := range pods {
		if err := admin.Delete(ctx, &pods[i], opts...); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// killOperatorContainer SIGKILLs the running manager container(s) through the cluster's
// containerd, by container id (from the Pod status): only the operator's process dies.
func killOperatorContainer(ctx context.Context) error {
	pods, err := operatorPods(ctx)
	if err != nil {
		return err
	}
	killed := 0
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
			if !ok || cs.State.Running == nil {
				continue
			}
			sock := filepath.Join(root, ".cluster", "run", "containerd.sock")
			out, err := exec.CommandContext(ctx, "ctr", "-a", sock, "-n", "k8s.io",
				"tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
			if err != nil {
				return fmt.Errorf("ctr tasks kill %s: %w: %s", id, err, out)
			}
			killed++
		}
	}
	if killed == 0 {
		return fmt.Errorf("no running operator container to kill")
	}
	return nil
}

// restartAPIServer runs hack/cluster.sh restart kube-apiserver and returns its output.
func restartAPIServer(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "cluster.sh"), "restart", "kube-apiserver")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// inject runs one fault and records it; the caller waits for the takeover.
func inject(ctx context.Context, rec *recorder, kind faultKind) fault {
	f := fault{Kind: kind, At: time.Now(), Holder: rec.leaseHolder()}
	switch kind {
	case faultDelete:
		f.Err = deleteOperatorPods(ctx, false)
	case faultForce:
		f.Err = deleteOperatorPods(ctx, true)
	case faultKill:
		f.Err = killOperatorContainer(ctx)
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
		if t, ok := rec.takeoverAfter(since, f.Holder); ok {
			f.Takeover = t
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
