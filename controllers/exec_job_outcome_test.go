package controllers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The tables below run the controller's pure decision (attemptOutcome, with the real
// frame reader and an in-memory Pod log) and then Normalize, over Job conditions × Pod
// phase and reason × tool container state × frame present, absent or forged.

const testOutputLimit = 1000

// The attempt every table observes: attempt 1 of testCallUID, arguments `{}`, in a namespace
// whose frame master is testMaster; the runner signs with testAttemptKey.
const testCallUID = types.UID("call-uid")

var (
	outcomeSpec        = &v1alpha1.ToolSpec{Sandbox: v1alpha1.Sandbox{MaxOutputBytes: testOutputLimit}}
	testDigest         = frame.DigestOf([]byte(`{}`))
	testMasterText, _  = frame.NewKey()
	testMaster, _      = frame.ParseKey(testMasterText)
	testAttemptKey     = frame.AttemptKey(testMaster, string(testCallUID), 1)
	otherMasterText, _ = frame.NewKey()
	otherMaster, _     = frame.ParseKey(otherMasterText)
)

// testTrust believes frames as the operator does for the test attempt.
func testTrust() frametrust.Trust {
	return frametrust.Trust{Masters: staticMasters(testMaster), CallUID: testCallUID, Attempt: 1, Digest: testDigest,
		MaxOutput: testOutputLimit}
}

func staticMasters(masters ...[]byte) frametrust.Masters {
	return func(context.Context, bool) ([][]byte, error) { return masters, nil }
}

// jobWith is the attempt's Job.
func jobWith(conds ...batchv1.JobCondition) *batchv1.Job {
	job := podspec.BuildJob(podspec.Input{Call: &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: testCallUID}},
		Tool: outcomeSpec, Arguments: []byte(`{}`), Digest: testDigest, Attempt: 1},
		podspec.DefaultOptions())
	job.Status.Conditions = conds
	return job
}

func failedCond(reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason}
}

var completeCond = batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached"}

func deletingJob() *batchv1.Job {
	job := jobWith()
	job.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	return job
}

// podWith is the Job's Pod in phase, with reason, and the body's container in state — its
// termination message, if any, in the signer's, which ends with it (as cmd/runner's two
// halves do): a message is the signer's frame, an ending without one a signer killed
// before it could write.
func podWith(phase corev1.PodPhase, reason string, state corev1.ContainerState) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1-abcde", Namespace: "ns"}}
	pod.Status.Phase, pod.Status.Reason = phase, reason
	pod.Status.ContainerStatuses = statusesFor(state)
	return pod
}

// statusesFor are the Pod's container statuses for the body's container in state (podWith).
func statusesFor(state corev1.ContainerState) []corev1.ContainerStatus {
	signer, body := running(), *state.DeepCopy()
	if t := body.Terminated; t != nil {
		st := &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: "Completed", Message: t.Message}
		if t.Message == "" {
			st.ExitCode, st.Reason = 137, "Error"
		}
		signer, t.Message = corev1.ContainerState{Terminated: st}, ""
	}
	return []corev1.ContainerStatus{
		{Name: podcontract.ToolContainerName, State: body}, {Name: podcontract.SignerContainerName, State: signer}}
}

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// configError is the kubelet's refusal to create a container, with its message.
func configError(msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: msg}}
}

func terminatedWith(exit int32, reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, Message: msg}}
}

// frames: what the tool container's termination message holds, and the Pod log.
type testFrame struct {
	name string
	msg  string
	log  []byte
	// honest frames are the runner's, signed with the Job's key, within the limit.
	honest bool
}

func encodeFrame(key []byte, f frame.Frame) (string, []byte) {
	msg, block, err := frame.Encoder{Key: key}.Encode(f)
	if err != nil {
		panic(err)
	}
	return string(msg), block
}

func stdoutFrame(exit int, stdout string) frame.Frame {
	f := frame.Frame{ExitCode: exit, ArgsDigest: testDigest, StdoutBytes: int64(len(stdout))}
	f.SetStdout([]byte(stdout))
	return f
}

// incompressible is output that the frame carries in the Pod log (below the limit).
var incompressible = func() string {
	var b strings.Builder
	for i := 0; b.Len() < testOutputLimit-20; i++ {
		fmt.Fprintf(&b, "%x", uint32(i)*2654435761)
	}
	return b.String()
}()

// randomText is n characters of deterministic, incompressible base64 text.
func randomText(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n*3/4+3)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// testFrames are built once: the oversized ones take a while to compress.
var testFrames = sync.OnceValue(buildTestFrames)

func buildTestFrames() []testFrame {
	okMsg, _ := encodeFrame(testAttemptKey, stdoutFrame(0, "hello"))
	exitMsg, _ := encodeFrame(testAttemptKey, stdoutFrame(3, "partial"))
	termed := stdoutFrame(143, "partial")
	termed.Signal = "SIGTERM"
	termMsg, _ := encodeFrame(testAttemptKey, termed)
	big := stdoutFrame(0, incompressible)
	big.StderrTail = randomText(6000) // too much for the termination message, even compressed
	logMsg, logBlock := encodeFrame(testAttemptKey, big)
	forged, _ := encodeFrame(nil, stdoutFrame(0, "FORGED"))
	wrongKey, _ := encodeFrame(frame.AttemptKey(otherMaster, string(testCallUID), 1), stdoutFrame(0, "FORGED"))
	// Signed by a runner of this namespace, but for another attempt, call or arguments (a
	// Pod someone else handed its arguments, a frame copied from another call's Pod).
	otherAttempt, _ := encodeFrame(frame.AttemptKey(testMaster, string(testCallUID), 2), stdoutFrame(0, "FORGED"))
	otherCall, _ := encodeFrame(frame.AttemptKey(testMaster, "another-call-uid", 1), stdoutFrame(0, "FORGED"))
	withMaster, _ := encodeFrame(testMaster, stdoutFrame(0, "FORGED"))
	otherArgs := stdoutFrame(0, "FORGED")
	otherArgs.ArgsDigest = frame.DigestOf([]byte(`{"path":"/etc/shadow"}`))
	otherArgsMsg, _ := encodeFrame(testAttemptKey, otherArgs)
	bigOtherArgs := big
	bigOtherArgs.ArgsDigest = otherArgs.ArgsDigest
	otherArgsLogMsg, otherArgsLog := encodeFrame(testAttemptKey, bigOtherArgs)
	bombFrame := stdoutFrame(0, strings.Repeat("a", 1<<20)) // over the limit: a runner ignoring it
	bombMsg, bombLog := encodeFrame(testAttemptKey, bombFrame)
	forgedBomb, forgedBombLog := encodeFrame(nil, bombFrame)
	return []testFrame{
		{name: "no frame"},
		{name: "honest success", msg: okMsg, honest: true},
		{name: "honest exit 3", msg: exitMsg, honest: true},
		{name: "honest SIGTERM", msg: termMsg, honest: true},
		{name: "honest in log", msg: logMsg, log: logBlock, honest: true},
		{name: "in log, log gone", msg: logMsg},
		{name: "forged unsigned", msg: forged},
		{name: "forged other key", msg: wrongKey},
		{name: "forged: another attempt's key", msg: otherAttempt},
		{name: "forged: another call's key", msg: otherCall},
		{name: "forged: the master itself", msg: withMaster},
		{name: "forged: other arguments", msg: otherArgsMsg},
		{name: "forged: other arguments in log", msg: otherArgsLogMsg, log: otherArgsLog},
		{name: "malformed", msg: "panic: runtime error"},
		{name: "oversized pointer", msg: bombMsg, log: bombLog},
		{name: "forged bomb", msg: forgedBomb, log: forgedBombLog},
	}
}

func frameNamed(name string) testFrame {
	for _, f := range testFrames() {
		if f.name == name {
			return f
		}
	}
	panic(name)
}

// memLogs serves one Pod log and counts reads.
type memLogs struct {
	log   []byte
	reads int
}

func (m *memLogs) TailLog(_ context.Context, _, _, _ string, tailLines, limitBytes int64) ([]byte, error) {
	m.reads++
	if m.log == nil {
		return nil, errors.New("log rotated away")
	}
	if limitBytes > frame.MaxFrameBytes(testOutputLimit)*2+frame.LogSlackBytes || tailLines > 1000 {
		return nil, fmt.Errorf("unbounded read: %d lines, %d bytes", tailLines, limitBytes)
	}
	return m.log[:min(int64(len(m.log)), limitBytes)], nil
}

// decide runs the controller's decision and the normaliser.
func decide(job *batchv1.Job, pod *corev1.Pod, log []byte, pastDeadline bool) (pipeline.Outcome, pipeline.Result, bool, *memLogs) {
	logs := &memLogs{log: log}
	read := testTrust().PodReader(pod, logs, time.Second)
	o, ended := attemptOutcome(context.Background(), attemptView{Job: job, Pod: pod, Attempt: 1, PastDeadline: pastDeadline}, read)
	return o, pipeline.Normalize(o, pipeline.NormalizeOptions{MaxOutputBytes: testOutputLimit}), ended, logs
}

// withFrame puts a frame's message into a terminated container state.
func withFrame(exit int32, reason string, f testFrame) corev1.ContainerState {
	return terminatedWith(exit, reason, f.msg)
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
		{name: "running", job: jobWith(), pod: podWith(corev1.PodRunning, "", running())},
		{name: "no Pod yet", job: jobWith()},
		{name: "pulling", job: jobWith(), pod: podWith(corev1.PodPending, "", waiting("ErrImagePull"))},
		{name: "honest success", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello", meta: map[string]string{pipeline.MetaOutputBytes: "5"}}},
		{name: "honest success, Job already complete", job: jobWith(completeCond),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello"}},
		{name: "honest exit 3", job: jobWith(failedCond("BackoffLimitExceeded")),
			pod:  podWith(corev1.PodFailed, "", withFrame(3, "Error", frameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, content: "partial", meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "honest result in the log", job: jobWith(), log: frameNamed("honest in log").log,
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("honest in log"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: incompressible}},
		{name: "result in a log that is gone", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("in log, log gone"))),
			want: new(unreadable("0"))},
		{name: "exit 0 without a frame", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", terminatedWith(0, "Completed", "")),
			want: new(lost("Completed", pipeline.MetaContainerExitCode, "0"))},
		{name: "exit 137 without a frame", job: jobWith(failedCond("BackoffLimitExceeded")),
			pod:  podWith(corev1.PodFailed, "", terminatedWith(137, "Error", "")),
			want: new(lost("Error", pipeline.MetaContainerExitCode, "137"))},
		{name: "forged frame, exit 0", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("forged unsigned"))),
			want: new(unreadable("0"))},
		{name: "frame signed with another key", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("forged other key"))),
			want: new(unreadable("0"))},
		{name: "runner died: not a frame", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("malformed"))),
			want: new(unreadable("0"))},
		{name: "signed pointer beyond the limit", job: jobWith(), log: frameNamed("oversized pointer").log,
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("oversized pointer"))),
			want: new(unreadable("0"))},
		{name: "forged bomb", job: jobWith(), log: frameNamed("forged bomb").log,
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("forged bomb"))),
			want: new(unreadable("0"))},
		{name: "OOM kill without a frame", job: jobWith(failedCond("BackoffLimitExceeded")),
			pod:  podWith(corev1.PodFailed, "", terminatedWith(137, "OOMKilled", "")),
			want: &wantResult{reason: pipeline.ReasonOOMKilled}},
		{name: "OOM kill after a forged frame", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "", withFrame(137, "OOMKilled", frameNamed("forged unsigned"))),
			want: &wantResult{reason: pipeline.ReasonOOMKilled}},
		{name: "Pod deadline", job: jobWith(failedCond("DeadlineExceeded")),
			pod:  podWith(corev1.PodFailed, "DeadlineExceeded", withFrame(143, "Error", frameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// The Job controller enforces its deadline by deleting the Pod: SIGTERM, no Pod reason.
		{name: "Job deadline, body ended by the kill's SIGTERM", job: jobWith(failedCond("DeadlineExceeded")),
			pod:  podWith(corev1.PodFailed, "", withFrame(143, "Error", frameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// Kubernetes 1.31+: FailureTarget first, Pod deleted, Failed once the Pod is gone; the
		// Pod's end can be read in between (the real-cluster HA run saw NonZeroExit so).
		{name: "Job deadline marked FailureTarget only, body ended by the kill's SIGTERM",
			job:  jobWith(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded"}),
			pod:  podWith(corev1.PodFailed, "", withFrame(143, "Error", frameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job deadline, container killed before the frame", job: jobWith(failedCond("DeadlineExceeded")),
			pod:  podWith(corev1.PodFailed, "", terminatedWith(137, "Error", "")),
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job deadline marked late, the body had exited 3 by itself", job: jobWith(failedCond("DeadlineExceeded")),
			pod:  podWith(corev1.PodFailed, "", withFrame(3, "Error", frameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, content: "partial", meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "Job deadline marked late, the body had succeeded", job: jobWith(failedCond("DeadlineExceeded")),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("honest success"))),
			want: &wantResult{reason: pipeline.ReasonSucceeded, content: "hello"}},
		{name: "SIGTERM without a Job deadline (e.g. node shutdown)", job: jobWith(failedCond("BackoffLimitExceeded")),
			pod:  podWith(corev1.PodFailed, "", withFrame(143, "Error", frameNamed("honest SIGTERM"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, meta: map[string]string{pipeline.MetaExitCode: "143"}}},
		{name: "evicted", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "Evicted", terminatedWith(137, "Error", "")),
			want: &wantResult{reason: pipeline.ReasonEvicted}},
		{name: "graceful node shutdown, no frame", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "Terminated", terminatedWith(0, "Completed", "")),
			want: new(lost("Terminated", pipeline.MetaContainerExitCode, "0"))},
		{name: "graceful node shutdown, honest frame", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "NodeShutdown", withFrame(3, "Error", frameNamed("honest exit 3"))),
			want: &wantResult{reason: pipeline.ReasonNonZeroExit, meta: map[string]string{pipeline.MetaExitCode: "3"}}},
		{name: "unknown Pod reason, container never reported", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "UnexpectedAdmissionError", corev1.ContainerState{}),
			want: new(lost("UnexpectedAdmissionError"))},
		{name: "Pod failed with no reason at all", job: jobWith(),
			pod:  podWith(corev1.PodFailed, "", corev1.ContainerState{}),
			want: new(lost("PodFailed"))},
		{name: "disruption (node lost)", job: jobWith(), pod: func() *corev1.Pod {
			p := podWith(corev1.PodFailed, "", running())
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
			return p
		}(), want: new(lost("DeletionByTaintManager"))},
		{name: "image never pulled", job: jobWith(), pod: podWith(corev1.PodPending, "", waiting("ErrImageNeverPull")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		// A credential's Secret or key is missing: the kubelet will not create the container
		// until someone creates it; the attempt ends now, not at its deadline.
		{name: "credential's Secret missing", job: jobWith(), pod: podWith(corev1.PodPending, "",
			configError(`secret "github" not found`)),
			want: &wantResult{reason: pipeline.ReasonCredentialMissing}},
		{name: "credential's key missing", job: jobWith(), pod: podWith(corev1.PodPending, "",
			configError("couldn't find key token in Secret agents/github")),
			want: &wantResult{reason: pipeline.ReasonCredentialMissing}},
		{name: "other container config error: waits (the deadline ends it)", job: jobWith(), pod: podWith(corev1.PodPending, "",
			configError("container has runAsNonRoot and image will run as root"))},
		// At the Job's deadline the Job controller deletes a Pod whose image never pulled;
		// the kubelet ends it with a stand-in terminated state (found by CI, test/e2e).
		{name: "Job deadline, image never pulled, kubelet's stand-in terminated state", job: jobWith(failedCond("DeadlineExceeded")),
			pod: podWith(corev1.PodFailed, "", terminatedWith(137, "ContainerStatusUnknown",
				"The container could not be located when the pod was terminated")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "Pod deadline, image never pulled, kubelet's stand-in terminated state", job: jobWith(),
			pod: podWith(corev1.PodFailed, "DeadlineExceeded", terminatedWith(137, "ContainerStatusUnknown",
				"The container could not be located when the pod was terminated")),
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "Job deadline, a created container the runtime lost", job: jobWith(failedCond("DeadlineExceeded")),
			pod: func() *corev1.Pod {
				p := podWith(corev1.PodFailed, "", terminatedWith(137, "ContainerStatusUnknown",
					"The container could not be located when the pod was terminated"))
				p.Status.ContainerStatuses[0].ContainerID = "containerd://0123"
				return p
			}(), want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job failed, Pod force-deleted", job: jobWith(failedCond("BackoffLimitExceeded")),
			want: new(lost("BackoffLimitExceeded"))},
		{name: "Job failed by pod failure policy", job: jobWith(failedCond("PodFailurePolicy")),
			want: new(lost("PodFailurePolicy"))},
		{name: "Job failed with no reason", job: jobWith(failedCond("")),
			want: new(lost("JobFailed"))},
		{name: "Job failed while the Pod still runs", job: jobWith(failedCond("BackoffLimitExceeded")),
			pod: podWith(corev1.PodRunning, "", running()), want: new(lost("BackoffLimitExceeded"))},
		{name: "Job deadline before the Pod reported", job: jobWith(failedCond("DeadlineExceeded")),
			pod: podWith(corev1.PodRunning, "", running()), want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "Job complete, Pod gone", job: jobWith(completeCond),
			want: &wantResult{reason: pipeline.ReasonJobDeleted}},
		{name: "Job deleted", job: deletingJob(), pod: podWith(corev1.PodRunning, "", running()),
			want: &wantResult{reason: pipeline.ReasonJobDeleted}},
		{name: "operator deadline", job: jobWith(), pod: podWith(corev1.PodRunning, "", running()), pastDeadline: true,
			want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		// The operator deletes the Job at its deadline before it writes the outcome; a restart
		// in between finds the Job being deleted (found by the chaos harness, test/chaos).
		{name: "operator deadline, Job deleted before the status write", job: deletingJob(), pod: podWith(corev1.PodRunning, "", running()),
			pastDeadline: true, want: &wantResult{reason: pipeline.ReasonDeadlineExceeded}},
		{name: "operator deadline, never started, Job deleted before the status write", job: deletingJob(),
			pod: podWith(corev1.PodPending, "", waiting("ImagePullBackOff")), pastDeadline: true,
			want: &wantResult{reason: pipeline.ReasonImageNeverStarted}},
		{name: "a frame signed for another attempt of the call", job: jobWith(),
			pod:  podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("forged: another attempt's key"))),
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
		"active":                      func() *batchv1.Job { return jobWith() },
		"failed BackoffLimitExceeded": func() *batchv1.Job { return jobWith(failedCond("BackoffLimitExceeded")) },
		"failed DeadlineExceeded":     func() *batchv1.Job { return jobWith(failedCond("DeadlineExceeded")) },
		"failed PodFailurePolicy":     func() *batchv1.Job { return jobWith(failedCond("PodFailurePolicy")) },
		"complete":                    func() *batchv1.Job { return jobWith(completeCond) },
		"deleting":                    deletingJob,
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
	containers := map[string]func(testFrame) corev1.ContainerState{
		"none":                      func(testFrame) corev1.ContainerState { return corev1.ContainerState{} },
		"waiting ErrImagePull":      func(testFrame) corev1.ContainerState { return waiting("ErrImagePull") },
		"waiting ErrImageNeverPull": func(testFrame) corev1.ContainerState { return waiting("ErrImageNeverPull") },
		"running":                   func(testFrame) corev1.ContainerState { return running() },
		"exit 0":                    func(f testFrame) corev1.ContainerState { return withFrame(0, "Completed", f) },
		"exit 1":                    func(f testFrame) corev1.ContainerState { return withFrame(1, "Error", f) },
		"exit 137 OOMKilled":        func(f testFrame) corev1.ContainerState { return withFrame(137, "OOMKilled", f) },
	}
	n := 0
	for jobName, mkJob := range jobs {
		for podName, shape := range pods {
			for csName, mkState := range containers {
				for _, f := range testFrames() {
					name := fmt.Sprintf("job %s/pod %s/container %s/%s", jobName, podName, csName, f.name)
					var pod *corev1.Pod
					if shape.present {
						pod = podWith(shape.phase, shape.reason, mkState(f))
					}
					o, res, ended, logs := decide(mkJob(), pod, f.log, false)
					n++
					checkCombination(t, name, o, res, ended, logs, pod, f)
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

func checkCombination(t *testing.T, name string, o pipeline.Outcome, res pipeline.Result, ended bool, logs *memLogs, pod *corev1.Pod, f testFrame) {
	t.Helper()
	if !ended {
		return
	}
	if res.Reason == "" || res.OK == res.IsError {
		t.Errorf("%s: result without a reason: %+v", name, res)
	}
	terminated := pod != nil && podspec.ToolContainerStatus(pod).State.Terminated != nil
	vouched := f.honest && terminated
	if res.OK && !vouched {
		t.Errorf("%s: succeeded without the runner's honest frame: %s", name, res.Reason)
	}
	if o.Report != nil && !vouched {
		t.Errorf("%s: a report from a frame that is not the runner's (exit %d)", name, o.Report.ExitCode)
	}
	if !f.honest {
		if _, ok := res.Meta[pipeline.MetaExitCode]; ok {
			t.Errorf("%s: an exit code the runner did not vouch for: %v", name, res.Meta)
		}
		if s, _ := res.Content.(string); strings.Contains(s, "FORGED") || strings.Contains(s, "aaaa") {
			t.Errorf("%s: forged content in the result", name)
		}
	}
	if strings.Contains(f.name, "bomb") || strings.Contains(f.name, "forged") || f.name == "oversized pointer" {
		if logs.reads != 0 {
			t.Errorf("%s: the log was read %d times for a frame that did not verify or announced too much", name, logs.reads)
		}
	}
}

// TestLogReadTimeout: a pods/log read that does not answer in time ends the attempt
// ResultUnreadable instead of blocking the reconciler.
func TestLogReadTimeout(t *testing.T) {
	job := jobWith()
	pod := podWith(corev1.PodSucceeded, "", withFrame(0, "Completed", frameNamed("honest in log")))
	read := testTrust().PodReader(pod, blockingLogs{}, 50*time.Millisecond)
	start := time.Now()
	o, ok := attemptOutcome(context.Background(), attemptView{Job: job, Pod: pod, Attempt: 1}, read)
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
	lost := stdoutFrame(frame.ExitRunnerError, "")
	lost.Reason, lost.Error = frame.ReasonBodyLost, "gone"
	lostMsg, _ := encodeFrame(testAttemptKey, lost)
	for _, tc := range []struct {
		name  string
		body  *corev1.ContainerStateTerminated
		msg   string // the signer's termination message ("": still running)
		ended bool
		want  pipeline.Reason
	}{
		{"body lost, OOM-killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.NewTime(now)}, lostMsg, true, pipeline.ReasonOOMKilled},
		{"body lost, killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: metav1.NewTime(now)}, lostMsg, true, pipeline.ReasonExecutionLost},
		{"success claimed, container killed", &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: metav1.NewTime(now)}, frameNamed("honest success").msg, true, pipeline.ReasonResultUnreadable},
		{"signer still running", &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now)}, "", false, ""},
		{"signer stuck past the grace", &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(now.Add(-signerGrace))}, "", true, pipeline.ReasonExecutionLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith(corev1.PodRunning, "", corev1.ContainerState{Terminated: tc.body})
			if tc.msg != "" {
				pod.Status.ContainerStatuses[1].State = terminatedWith(tc.body.ExitCode, "Completed", tc.msg)
				pod.Status.Phase = corev1.PodFailed
			} else {
				pod.Status.ContainerStatuses[1].State = running()
			}
			read := testTrust().PodReader(pod, &memLogs{}, time.Second)
			o, ended := attemptOutcome(context.Background(), attemptView{Job: jobWith(), Pod: pod, Attempt: 1, Now: now}, read)
			if ended != tc.ended {
				t.Fatalf("ended %v, want %v (outcome %+v)", ended, tc.ended, o)
			}
			if !ended {
				if wait := signerPending(pod, now); wait != signerGrace {
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
