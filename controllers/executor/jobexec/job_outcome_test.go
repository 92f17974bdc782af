package jobexec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// The tables below run the controller's pure decision (AttemptOutcome, with the real
// frame reader and an in-memory Pod log) and then Normalize, over Job conditions × Pod
// phase and reason × tool container state × frame present, absent or forged.

// decide runs the controller's decision and the normaliser.
func decide(job *batchv1.Job, pod *corev1.Pod, log []byte, pastDeadline bool) (pipeline.Outcome, pipeline.Result, bool, *executortest.MemLogs) {
	logs := &executortest.MemLogs{Log: log}
	read := executortest.Trust().PodReader(pod, logs, time.Second)
	o, ended := AttemptOutcome(context.Background(), AttemptView{Job: job, Pod: pod, Attempt: 1, PastDeadline: pastDeadline, Features: executortest.Features}, read)
	return o, pipeline.Normalize(o, pipeline.NormalizeOptions{MaxOutputBytes: executortest.OutputLimit}), ended, logs
}

type wantResult struct {
	reason  pipeline.Reason
	content any               // checked when set
	meta    map[string]string // keys checked when set (besides attempt)
}

func TestAttemptOutcome(t *testing.T) {
	lost := func(k8s string, kv ...string) wantResult {
		m := map[string]string{pipeline.MetaKubernetesReason: k8s}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return wantResult{reason: pipeline.ReasonExecutionLost, meta: m}
	}
	unreadable := func(exit string) wantResult {
		return wantResult{reason: pipeline.ReasonResultUnreadable,
			meta: map[string]string{pipeline.MetaKubernetesReason: "Completed", pipeline.MetaContainerExitCode: exit}}
	}
	cases := []struct {
		name         string
		job          *batchv1.Job
		pod          *corev1.Pod
		log          []byte
		pastDeadline bool
		want         *wantResult // nil: the attempt has not ended
	}{
		{name: "running", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running())},
		{name: "no Pod yet", job: executortest.JobWith()},
		{name: "pulling", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodPending, "", executortest.Waiting("ErrImagePull"))},
		{name: "honest success", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello", meta: map[string]string{pipeline.MetaOutputBytes: "5"}}},
		{name: "honest success, Job already complete", job: executortest.JobWith(executortest.CompleteCond),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello"}},
		{name: "honest exit 3", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(3, "Error", executortest.FrameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, content: "partial", meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "honest result in the log", job: executortest.JobWith(), log: executortest.FrameNamed("honest in log").Log,
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("honest in log"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: executortest.Incompressible}},
		{name: "result in a log that is gone", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("in log, log gone"))),
			want: new(unreadable("0"))},
		{name: "exit 0 without a frame", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.TerminatedWith(0, "Completed", "")),
			want: new(lost("Completed", pipeline.MetaContainerExitCode, "0"))},
		{name: "exit 137 without a frame", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.TerminatedWith(137, "Error", "")),
			want: new(lost("Error", pipeline.MetaContainerExitCode, "137"))},
		{name: "forged frame, exit 0", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged unsigned"))),
			want: new(unreadable("0"))},
		{name: "frame signed with another key", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged other key"))),
			want: new(unreadable("0"))},
		{name: "runner died: not a frame", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("malformed"))),
			want: new(unreadable("0"))},
		{name: "signed pointer beyond the limit", job: executortest.JobWith(), log: executortest.FrameNamed("oversized pointer").Log,
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("oversized pointer"))),
			want: new(unreadable("0"))},
		{name: "forged bomb", job: executortest.JobWith(), log: executortest.FrameNamed("forged bomb").Log,
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged bomb"))),
			want: new(unreadable("0"))},
		{name: "OOM kill without a frame", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.TerminatedWith(137, "OOMKilled", "")),
			want: &wantResult{reason: pipeline.ReasonOOMKilled}},
		{name: "OOM kill after a forged frame", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(137, "OOMKilled", executortest.FrameNamed("forged unsigned"))),
			want: &wantResult{reason: pipeline.ReasonOOMKilled}},
		{name: "Pod deadline", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "DeadlineExceeded", executortest.WithFrame(143, "Error", executortest.FrameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// The Job controller enforces its deadline by deleting the Pod: SIGTERM, no Pod reason.
		{name: "Job deadline, body ended by the kill's SIGTERM", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(143, "Error", executortest.FrameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// Kubernetes 1.31+: FailureTarget first, Pod deleted, Failed once the Pod is gone; the
		// Pod's end can be read in between (the real-cluster HA run saw NonZeroExit so).
		{name: "Job deadline marked FailureTarget only, body ended by the kill's SIGTERM",
			job:  executortest.JobWith(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(143, "Error", executortest.FrameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job deadline, container killed before the frame", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.TerminatedWith(137, "Error", "")),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job deadline marked late, the body had exited 3 by itself", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(3, "Error", executortest.FrameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, content: "partial", meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "Job deadline marked late, the body had succeeded", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello"}},
		{name: "SIGTERM without a Job deadline (e.g. node shutdown)", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			pod:  executortest.PodWith(corev1.PodFailed, "", executortest.WithFrame(143, "Error", executortest.FrameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, meta: map[string]string{pipeline.MetaExitCode: "143"}}},
		{name: "evicted", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "Evicted", executortest.TerminatedWith(137, "Error", "")),
			want: &wantResult{reason: pipeline.ReasonEvicted}},
		{name: "graceful node shutdown, no frame", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "Terminated", executortest.TerminatedWith(0, "Completed", "")),
			want: new(lost("Terminated", pipeline.MetaContainerExitCode, "0"))},
		{name: "graceful node shutdown, honest frame", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "NodeShutdown", executortest.WithFrame(3, "Error", executortest.FrameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "unknown Pod reason, container never reported", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "UnexpectedAdmissionError", corev1.ContainerState{}),
			want: new(lost("UnexpectedAdmissionError"))},
		{name: "Pod failed with no reason at all", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodFailed, "", corev1.ContainerState{}),
			want: new(lost("PodFailed"))},
		{name: "disruption (node lost)", job: executortest.JobWith(), pod: func() *corev1.Pod {
			p := executortest.PodWith(corev1.PodFailed, "", executortest.Running())
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
			return p
		}(), want: new(lost("DeletionByTaintManager"))},
		{name: "image never pulled", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodPending, "", executortest.Waiting("ErrImageNeverPull")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		// A credential's Secret or key is missing: the kubelet will not create the container
		// until someone creates it; the attempt ends now, not at its deadline.
		{name: "credential's Secret missing", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodPending, "",
			executortest.ConfigError(`secret "github" not found`)),
			want: &wantResult{reason: pipeline.ReasonCredentialMissing}},
		{name: "credential's key missing", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodPending, "",
			executortest.ConfigError("couldn't find key token in Secret agents/github")),
			want: &wantResult{reason: pipeline.ReasonCredentialMissing}},
		{name: "other container config error: waits (the deadline ends it)", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodPending, "",
			executortest.ConfigError("container has runAsNonRoot and image will run as root"))},
		// At the Job's deadline the Job controller deletes a Pod whose image never pulled;
		// the kubelet ends it with a stand-in terminated state (found by CI, test/e2e).
		{name: "Job deadline, image never pulled, kubelet's stand-in terminated state", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod: executortest.PodWith(corev1.PodFailed, "", executortest.TerminatedWith(137, "ContainerStatusUnknown",
				"The container could not be located when the pod was terminated")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "Pod deadline, image never pulled, kubelet's stand-in terminated state", job: executortest.JobWith(),
			pod: executortest.PodWith(corev1.PodFailed, "DeadlineExceeded", executortest.TerminatedWith(137, "ContainerStatusUnknown",
				"The container could not be located when the pod was terminated")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "Job deadline, a created container the runtime lost", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod: func() *corev1.Pod {
				p := executortest.PodWith(corev1.PodFailed, "", executortest.TerminatedWith(137, "ContainerStatusUnknown",
					"The container could not be located when the pod was terminated"))
				p.Status.ContainerStatuses[0].ContainerID = "containerd://0123"
				return p
			}(), want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job failed, Pod force-deleted", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			want: new(lost("BackoffLimitExceeded"))},
		{name: "Job failed by pod failure policy", job: executortest.JobWith(executortest.FailedCond("PodFailurePolicy")),
			want: new(lost("PodFailurePolicy"))},
		{name: "Job failed with no reason", job: executortest.JobWith(executortest.FailedCond("")),
			want: new(lost("JobFailed"))},
		{name: "Job failed while the Pod still runs", job: executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")),
			pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running()), want: new(lost("BackoffLimitExceeded"))},
		{name: "Job deadline before the Pod reported", job: executortest.JobWith(executortest.FailedCond("DeadlineExceeded")),
			pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running()), want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job complete, Pod gone", job: executortest.JobWith(executortest.CompleteCond),
			want: &wantResult{reason: pipeline.ReasonJobDeleted}},
		{name: "Job deleted", job: executortest.DeletingJob(), pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running()),
			want: &wantResult{reason: pipeline.ReasonJobDeleted}},
		{name: "operator deadline", job: executortest.JobWith(), pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running()), pastDeadline: true,
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// The operator deletes the Job at its deadline before it writes the outcome; a restart
		// in between finds the Job being deleted (found by the chaos harness, test/chaos).
		{name: "operator deadline, Job deleted before the status write", job: executortest.DeletingJob(), pod: executortest.PodWith(corev1.PodRunning, "", executortest.Running()),
			pastDeadline: true, want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "operator deadline, never started, Job deleted before the status write", job: executortest.DeletingJob(),
			pod: executortest.PodWith(corev1.PodPending, "", executortest.Waiting("ImagePullBackOff")), pastDeadline: true,
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "a frame signed for another attempt of the call", job: executortest.JobWith(),
			pod:  executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged: another attempt's key"))),
			want: new(unreadable("0"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, res, ended, _ := decide(tc.job, tc.pod, tc.log, tc.pastDeadline)
			if tc.want == nil {
				if ended {
					t.Fatalf("ended with %+v, want still running", o)
				}
				return
			}
			if !ended {
				t.Fatal("not ended")
			}
			if res.Reason != tc.want.reason || res.OK != (tc.want.reason == pipeline.ReasonSucceeded) {
				t.Fatalf("result %s (ok %v) %q meta %v, want %s; outcome %+v", res.Reason, res.OK, res.Error, res.Meta, tc.want.reason, o)
			}
			if tc.want.content != nil {
				if diff := cmp.Diff(tc.want.content, res.Content); diff != "" {
					t.Errorf("content (-want +got):\n%.500s", diff)
				}
			}
			for k, v := range tc.want.meta {
				if res.Meta[k] != v {
					t.Errorf("meta %s = %q, want %q (meta %v)", k, res.Meta[k], v, res.Meta)
				}
			}
		})
	}
}

// TestAttemptOutcomeEveryCombination runs every combination of Job conditions, Pod phase
// and reason, tool container state and frame, and checks what must hold whatever the
// combination: a success needs the runner's honest frame from a terminated container;
// a forged, oversized or unreadable frame never lends its content or exit code; and an
// ended attempt always normalises to a result with a reason.
func TestAttemptOutcomeEveryCombination(t *testing.T) {
	jobs := map[string]func() *batchv1.Job{
		"active":                      func() *batchv1.Job { return executortest.JobWith() },
		"failed BackoffLimitExceeded": func() *batchv1.Job { return executortest.JobWith(executortest.FailedCond("BackoffLimitExceeded")) },
		"failed DeadlineExceeded":     func() *batchv1.Job { return executortest.JobWith(executortest.FailedCond("DeadlineExceeded")) },
		"failed PodFailurePolicy":     func() *batchv1.Job { return executortest.JobWith(executortest.FailedCond("PodFailurePolicy")) },
		"complete":                    func() *batchv1.Job { return executortest.JobWith(executortest.CompleteCond) },
		"deleting":                    executortest.DeletingJob,
	}
	type podShape struct {
		present bool
		phase   corev1.PodPhase
		reason  string
	}
	pods := map[string]podShape{
		"none": {}, "pending": {true, corev1.PodPending, ""}, "running": {true, corev1.PodRunning, ""},
		"succeeded": {true, corev1.PodSucceeded, ""}, "failed": {true, corev1.PodFailed, ""},
		"failed Evicted": {true, corev1.PodFailed, "Evicted"}, "failed DeadlineExceeded": {true, corev1.PodFailed, "DeadlineExceeded"},
		"failed NodeShutdown": {true, corev1.PodFailed, "NodeShutdown"}, "failed Terminated": {true, corev1.PodFailed, "Terminated"},
	}
	containers := map[string]func(executortest.Frame) corev1.ContainerState{
		"none":                      func(executortest.Frame) corev1.ContainerState { return corev1.ContainerState{} },
		"waiting ErrImagePull":      func(executortest.Frame) corev1.ContainerState { return executortest.Waiting("ErrImagePull") },
		"waiting ErrImageNeverPull": func(executortest.Frame) corev1.ContainerState { return executortest.Waiting("ErrImageNeverPull") },
		"running":                   func(executortest.Frame) corev1.ContainerState { return executortest.Running() },
		"exit 0":                    func(f executortest.Frame) corev1.ContainerState { return executortest.WithFrame(0, "Completed", f) },
		"exit 1":                    func(f executortest.Frame) corev1.ContainerState { return executortest.WithFrame(1, "Error", f) },
		"exit 137 OOMKilled":        func(f executortest.Frame) corev1.ContainerState { return executortest.WithFrame(137, "OOMKilled", f) },
	}
	n := 0
	for jobName, mkJob := range jobs {
		for podName, shape := range pods {
			for csName, mkState := range containers {
				for _, f := range executortest.Frames() {
					name := fmt.Sprintf("job %s/pod %s/container %s/%s", jobName, podName, csName, f.Name)
					var pod *corev1.Pod
					if shape.present {
						pod = executortest.PodWith(shape.phase, shape.reason, mkState(f))
					}
					o, res, ended, logs := decide(mkJob(), pod, f.Log, false)
					n++
					checkCombination(t, name, o, res, ended, logs, pod, f)
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func checkCombination(t *testing.T, name string, o pipeline.Outcome, res pipeline.Result, ended bool, logs *executortest.MemLogs, pod *corev1.Pod, f executortest.Frame) {
	t.Helper()
	if !ended {
		return
	}
	if res.Reason == "" || res.OK == res.IsError {
		t.Errorf("%s: result without a reason: %+v", name, res)
	}
	terminated := pod != nil && podspec.ToolContainerStatus(pod).State.Terminated != nil
	vouched := f.Honest && terminated
	if res.OK && !vouched {
		t.Errorf("%s: succeeded without the runner's honest frame: %s", name, res.Reason)
	}
	if o.Report != nil && !vouched {
		t.Errorf("%s: a report from a frame that is not the runner's (exit %d)", name, o.Report.ExitCode)
	}
	if !f.Honest {
		if _, ok := res.Meta[pipeline.MetaExitCode]; ok {
			t.Errorf("%s: an exit code the runner did not vouch for: %v", name, res.Meta)
		}
		if s, _ := res.Content.(string); strings.Contains(s, "FORGED") || strings.Contains(s, "aaaa") {
			t.Errorf("%s: forged content in the result", name)
		}
	}
	if strings.Contains(f.Name, "bomb") || strings.Contains(f.Name, "forged") || f.Name == "oversized pointer" {
		if logs.Reads != 0 {
			t.Errorf("%s: the log was read %d times for a frame that did not verify or announced too much", name, logs.Reads)
		}
	}
}

// TestLogReadTimeout: a pods/log read that does not answer in time ends the attempt
// ResultUnreadable instead of blocking the reconciler.
func TestLogReadTimeout(t *testing.T) {
	job := executortest.JobWith()
	pod := executortest.PodWith(corev1.PodSucceeded, "", executortest.WithFrame(0, "Completed", executortest.FrameNamed("honest in log")))
	read := executortest.Trust().PodReader(pod, blockingLogs{}, 50*time.Millisecond)
	start := time.Now()
	o, ok := AttemptOutcome(context.Background(), AttemptView{Job: job, Pod: pod, Attempt: 1, Features: executortest.Features}, read)
	if !ok || !strings.Contains(o.Unreadable, context.DeadlineExceeded.Error()) || o.Report != nil {
		t.Fatalf("outcome: unreadable %q, report %v", o.Unreadable, o.Report != nil)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the read took %v", time.Since(start))
	}
	if res := pipeline.Normalize(o, pipeline.NormalizeOptions{}); res.Reason != pipeline.ReasonResultUnreadable {
		t.Fatalf("result %+v", res)
	}
}

type blockingLogs struct{}

func (blockingLogs) TailLog(ctx context.Context, _, _, _ string, _, _ int64) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// The signer vouches for a run only when it heard how it ended and agrees with the kubelet
// about the body's container: a BodyLost frame is no account of the run (the kubelet's
// reason decides), a frame whose exit code is not the container's is unreadable, and a
// body's container whose signer has not ended is waited for — until signerGrace, then read
// without a frame.
func TestAttemptOutcomeTrustsTheSignerOnlyForWhatItSaw(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	lost := executortest.StdoutFrame(frame.ExitRunnerError, "")
	lost.Reason, lost.Error = frame.ReasonBodyLost, "gone"
	lostMsg, _ := executortest.EncodeFrame(executortest.AttemptKey, lost)
	stopped := executortest.StdoutFrame(143, "partial")
	stopped.Signal, stopped.Reason, stopped.Error = "SIGTERM", frame.ReasonDeadlineExceeded, "the call ran past its deadline of 1s and was stopped"
	stoppedMsg, _ := executortest.EncodeFrame(executortest.AttemptKey, stopped)
	unreported := executortest.StdoutFrame(frame.ExitRunnerError, "")
	unreported.Reason, unreported.Error = frame.ReasonDeadlineExceeded, "the call ran past its deadline of 1s and was stopped; its end was never reported"
	unreportedMsg, _ := executortest.EncodeFrame(executortest.AttemptKey, unreported)
	for _, tc := range []struct {
		name  string
		body  *corev1.ContainerStateTerminated
		msg   string // the signer's termination message ("": still running)
		ended bool
		want  pipeline.Reason
	}{
		{"body lost, OOM-killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.NewTime(now)}, lostMsg, true, pipeline.ReasonOOMKilled},
		{"body lost, killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: metav1.NewTime(now)}, lostMsg, true, pipeline.ReasonExecutionLost},
		{"success claimed, container killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: metav1.NewTime(now)}, executortest.FrameNamed("honest success").Msg, true, pipeline.ReasonResultUnreadable},
		// The runner stops the tool at its timeout from the body's start (the Pod's deadline
		// adds the start allowance): the signer's frame says so, whatever the container's code.
		{"stopped at the tool's timeout by the runner", &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error", FinishedAt: metav1.NewTime(now)}, stoppedMsg, true, pipeline.ReasonDeadlineExceeded},
		{"past the timeout by the signer's clock, the body killed later", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: metav1.NewTime(now)}, unreportedMsg, true, pipeline.ReasonDeadlineExceeded},
		{"signer still running", &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now)}, "", false, ""},
		{"signer stuck past the grace", &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now.Add(-signerGrace))}, "", true, pipeline.ReasonExecutionLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := executortest.PodWith(corev1.PodRunning, "", corev1.ContainerState{Terminated: tc.body})
			if tc.msg != "" {
				pod.Status.ContainerStatuses[1].State = executortest.TerminatedWith(tc.body.ExitCode, "Completed", tc.msg)
				pod.Status.Phase = corev1.PodFailed
			} else {
				pod.Status.ContainerStatuses[1].State = executortest.Running()
			}
			read := executortest.Trust().PodReader(pod, &executortest.MemLogs{}, time.Second)
			o, ended := AttemptOutcome(context.Background(), AttemptView{Job: executortest.JobWith(), Pod: pod, Attempt: 1, Now: now, Features: executortest.Features}, read)
			if ended != tc.ended {
				t.Fatalf("ended %v, want %v (outcome %+v)", ended, tc.ended, o)
			}
			if !ended {
				if wait := SignerPending(pod, now); wait != signerGrace {
					t.Errorf("wait %v for the signer, want %v", wait, signerGrace)
				}
				return
			}
			if res := pipeline.Normalize(o, pipeline.NormalizeOptions{}); res.Reason != tc.want {
				t.Errorf("result %s, want %s (outcome %+v)", res.Reason, tc.want, o)
			}
		})
	}
}
