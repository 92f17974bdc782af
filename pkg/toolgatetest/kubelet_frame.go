package toolgatetest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// terminate plays the runner: it frames the tool's output exactly as cmd/runner does
// (bounded stdout, digest check, termination message or log block, signed with the
// attempt's key the kubelet resolves for the signer from the attempt's key Secret), or
// plays what Outcome says a hostile body did instead.
func (k *Kubelet) terminate(ctx context.Context, pod *corev1.Pod, o Outcome) (*corev1.ContainerStateTerminated, error) {
	env, err := k.containerEnv(ctx, pod)
	if err != nil {
		return nil, err
	}
	key, _ := frame.ParseKey(env[podcontract.EnvAttemptKey])
	return k.terminateWith(pod, o, env, []byte(env[podcontract.EnvArgs]), key)
}

// signerSpec is the Pod spec's signer container: the runner's environment (arguments,
// keys, credentials' copies) is its.
func signerSpec(spec *corev1.PodSpec) *corev1.Container {
	return containerIn(spec, podcontract.SignerContainerName)
}

// containerIn is the spec's container of that name, or an empty one (a Pod a test made by
// hand: no runner, nothing signed).
func containerIn(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return &corev1.Container{}
}

// containerEnv is the signer's environment as a kubelet hands it to the runner: $(…)
// references expanded, Secret values and the Pod's uid resolved (Secrets read live: the
// operator's cache holds none). A Secret or key that does not exist leaves its variable
// unset — a real kubelet would not start the container; the simulated runner then signs
// nothing, as a runner without a key does (a Job a test made by hand).
func (k *Kubelet) containerEnv(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	c := signerSpec(&pod.Spec)
	env := expandEnv(c)
	secrets := map[string]*corev1.Secret{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.uid":
			env[e.Name] = string(pod.UID)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			secret, read := secrets[ref.Name]
			if !read {
				secret = &corev1.Secret{}
				err := k.reader().Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, secret)
				if client.IgnoreNotFound(err) != nil {
					return nil, fmt.Errorf("simulated kubelet: secret %s for %s: %w", ref.Name, e.Name, err)
				}
				secrets[ref.Name] = secret
			}
			delete(env, e.Name)
			if v, ok := secret.Data[ref.Key]; ok {
				env[e.Name] = string(v)
			}
		}
	}
	return env, nil
}

// terminateWith is terminate for arguments that came another way (a warm Pod's Handover,
// whose digest is in env's TOOLGATE_ARGS_DIGEST), signed with key (nil: unsigned).
func (k *Kubelet) terminateWith(pod *corev1.Pod, o Outcome, env map[string]string, args []byte, key []byte) (*corev1.ContainerStateTerminated, error) {
	term := &corev1.ContainerStateTerminated{ExitCode: o.ExitCode, Reason: o.Reason, StartedAt: metav1.Now(), FinishedAt: metav1.Now()}
	if term.Reason == "" {
		term.Reason = "Completed"
		if o.ExitCode != 0 {
			term.Reason = "Error"
		}
	}
	if o.NoFrame {
		return term, nil
	}
	enc := frame.Encoder{}
	if !o.Forge {
		enc.Key = key
	}
	f := frame.Frame{ExitCode: int(o.ExitCode), Signal: o.Signal, ArgsDigest: env[podcontract.EnvArgsDigest], StderrTail: o.Stderr}
	if frame.DigestOf(args) != env[podcontract.EnvArgsDigest] {
		f.ExitCode, f.Reason, f.Error = frame.ExitRunnerError, frame.ReasonArgumentsDigestMismatch, "the arguments that reached the tool differ from the frozen arguments, so the tool was not run"
		term.ExitCode, term.Reason = frame.ExitRunnerError, "Error"
	} else {
		stdout := o.Stdout
		if o.Echo {
			stdout = args
		}
		limit, err := strconv.Atoi(env[podcontract.EnvMaxOutput])
		if err != nil || limit <= 0 {
			limit = 1 << 20
		}
		f.StdoutBytes = int64(len(stdout))
		if len(stdout) > limit && !o.Forge {
			stdout, f.Truncated = stdout[:limit], true
		}
		f.SetStdout(stdout)
	}
	if o.Bomb {
		f = frame.Frame{ArgsDigest: f.ArgsDigest, StdoutBytes: BombBytes}
		f.SetStdout(bytes.Repeat([]byte("a"), BombBytes))
	}
	msg, logBlock, err := enc.Encode(f)
	if err != nil {
		return nil, fmt.Errorf("simulated runner frame: %w", err)
	}
	term.Message = string(msg)
	if logBlock != nil {
		k.mu.Lock()
		k.logs[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = logBlock
		k.mu.Unlock()
	}
	return term, nil
}

// endedStatuses are the statuses of the Pod's two containers once both ended as term says:
// the body's container with term's exit code and reason but no message (what a body writes
// there is never read), the signer's with term's message, the frame — or, with none, killed
// before it could write one.
func endedStatuses(pod *corev1.Pod, term *corev1.ContainerStateTerminated) []corev1.ContainerStatus {
	body := term.DeepCopy()
	body.Message = ""
	signer := term.DeepCopy()
	signer.Reason = "Completed"
	if term.ExitCode != 0 {
		signer.Reason = "Error"
	}
	if term.Message == "" {
		signer.ExitCode, signer.Reason = 137, "Error"
	}
	id := "simulated://" + string(pod.UID)
	return []corev1.ContainerStatus{
		{Name: podcontract.SignerContainerName, Started: ptr.To(false), ContainerID: id + "/signer", State: corev1.ContainerState{Terminated: signer}},
		{Name: podcontract.ToolContainerName, Image: toolImage(pod), Started: ptr.To(false), ContainerID: id, State: corev1.ContainerState{Terminated: body}},
	}
}

// runningStatuses are the statuses of the Pod's two containers running.
func runningStatuses(pod *corev1.Pod, ready bool) []corev1.ContainerStatus {
	now := metav1.Now()
	id := "simulated://" + string(pod.UID)
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	return []corev1.ContainerStatus{
		{Name: podcontract.SignerContainerName, Ready: ready, Started: ptr.To(true), ContainerID: id + "/signer", State: running},
		{Name: podcontract.ToolContainerName, Image: toolImage(pod), Ready: ready, Started: ptr.To(true), ContainerID: id, State: running},
	}
}

// toolImage is the body container's image.
func toolImage(pod *corev1.Pod) string {
	return containerIn(&pod.Spec, podcontract.ToolContainerName).Image
}

// TailLog serves the logs of simulated Pods (the runner's log block) in place of pods/log;
// pass the Kubelet as the reconcilers' LogReader. It records every read (LogReads).
func (k *Kubelet) TailLog(_ context.Context, namespace, pod, _ string, tailLines, limitBytes int64) ([]byte, error) {
	name := types.NamespacedName{Namespace: namespace, Name: pod}
	k.mu.Lock()
	data, ok := k.logs[name]
	k.logReads[name] = append(k.logReads[name], LogRead{TailLines: tailLines, LimitBytes: limitBytes})
	k.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no log for pod %s/%s", namespace, pod)
	}
	if tailLines > 0 {
		lines := bytes.SplitAfter(data, []byte("\n"))
		if int64(len(lines)) > tailLines {
			data = bytes.Join(lines[int64(len(lines))-tailLines:], nil)
		}
	}
	if limitBytes > 0 && int64(len(data)) > limitBytes {
		data = data[:limitBytes]
	}
	return data, nil
}

// LogReads returns the reads of a simulated Pod's log so far.
func (k *Kubelet) LogReads(namespace, pod string) []LogRead {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]LogRead(nil), k.logReads[types.NamespacedName{Namespace: namespace, Name: pod}]...)
}

// PodName is the name of the simulated Pod of a Job.
func PodName(jobName string) string { return jobName + "-sim" }
