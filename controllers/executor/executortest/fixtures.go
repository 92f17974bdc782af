// Package executortest holds the fixtures the executors' tests share (controllers/executor/
// jobexec, warmexec and the reconciler's): the test attempt's keys and digest, Jobs and Pods
// in every state, and the runner's frames, honest and forged. It imports no controller
// package but frametrust, execenv and the features (WithFeatures).
package executortest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// OutputLimit is the test tool's sandbox.maxOutputBytes.
const OutputLimit = 1000

// The attempt every table observes: attempt 1 of CallUID, arguments `{}`, in a namespace
// whose frame master is Master; the runner signs with AttemptKey.
const CallUID = types.UID("call-uid")

// The test attempt's tool spec, arguments digest and keys (OtherMaster: another
// namespace's, whose frames must not verify).
var (
	OutcomeSpec        = &v1alpha1.ToolSpec{Sandbox: v1alpha1.Sandbox{MaxOutputBytes: OutputLimit}}
	Digest             = frame.DigestOf([]byte(`{}`))
	MasterText, _      = frame.NewKey()
	Master, _          = frame.ParseKey(MasterText)
	AttemptKey         = frame.AttemptKey(Master, string(CallUID), 1)
	OtherMasterText, _ = frame.NewKey()
	OtherMaster, _     = frame.ParseKey(OtherMasterText)
)

// Trust believes frames as the operator does for the test attempt.
func Trust() frametrust.Trust {
	return frametrust.Trust{Masters: StaticMasters(Master), CallUID: CallUID, Attempt: 1, Digest: Digest,
		MaxOutput: OutputLimit}
}

// StaticMasters are always masters.
func StaticMasters(masters ...[]byte) frametrust.Masters {
	return func(context.Context, bool) ([][]byte, error) { return masters, nil }
}

// JobWith is the attempt's Job.
func JobWith(conds ...batchv1.JobCondition) *batchv1.Job {
	job := podspec.BuildJob(podspec.Input{Call: &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: CallUID}},
		Tool: OutcomeSpec, Arguments: []byte(`{}`), Digest: Digest, Attempt: 1},
		podspec.DefaultOptions())
	job.Status.Conditions = conds
	return job
}

// FailedCond is the Job condition Failed for reason.
func FailedCond(reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason}
}

// CompleteCond is the Job condition Complete.
var CompleteCond = batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached"}

// DeletingJob is the attempt's Job, being deleted.
func DeletingJob() *batchv1.Job {
	job := JobWith()
	job.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	return job
}

// PodWith is the Job's Pod in phase, with reason, and the body's container in state — its
// termination message, if any, in the signer's, which ends with it (as cmd/runner's two
// halves do): a message is the signer's frame, an ending without one a signer killed
// before it could write.
func PodWith(phase corev1.PodPhase, reason string, state corev1.ContainerState) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-1-abcde", Namespace: "ns"}}
	pod.Status.Phase, pod.Status.Reason = phase, reason
	pod.Status.ContainerStatuses = StatusesFor(state)
	return pod
}

// StatusesFor are the Pod's container statuses for the body's container in state (PodWith).
func StatusesFor(state corev1.ContainerState) []corev1.ContainerStatus {
	signer, body := Running(), *state.DeepCopy()
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

// Running is a running container's state.
func Running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

// Waiting is a waiting container's state, for reason.
func Waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

// ConfigError is the kubelet's refusal to create a container, with its message.
func ConfigError(msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: msg}}
}

// TerminatedWith is a terminated container's state.
func TerminatedWith(exit int32, reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, Message: msg}}
}

// Frame is what the tool container's termination message holds, and the Pod log.
type Frame struct {
	// Name names the frame in FrameNamed and in test names.
	Name string
	// Msg is the termination message; Log the Pod log (nil: none).
	Msg string
	Log []byte
	// Honest frames are the runner's, signed with the Job's key, within the limit.
	Honest bool
}

// EncodeFrame is f signed with key: the termination message and the Pod log block.
func EncodeFrame(key []byte, f frame.Frame) (string, []byte) {
	msg, block, err := frame.Encoder{Key: key}.Encode(f)
	if err != nil {
		panic(err)
	}
	return string(msg), block
}

// StdoutFrame is a frame of the test arguments with exit code exit and stdout.
func StdoutFrame(exit int, stdout string) frame.Frame {
	f := frame.Frame{ExitCode: exit, ArgsDigest: Digest, StdoutBytes: int64(len(stdout))}
	f.SetStdout([]byte(stdout))
	return f
}

// Incompressible is output that the frame carries in the Pod log (below the limit).
var Incompressible = func() string {
	var b strings.Builder
	for i := 0; b.Len() < OutputLimit-20; i++ {
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

// Frames are every frame the tables observe, built once: the oversized ones take a while
// to compress.
var Frames = sync.OnceValue(buildTestFrames)

func buildTestFrames() []Frame {
	okMsg, _ := EncodeFrame(AttemptKey, StdoutFrame(0, "hello"))
	exitMsg, _ := EncodeFrame(AttemptKey, StdoutFrame(3, "partial"))
	termed := StdoutFrame(143, "partial")
	termed.Signal = "SIGTERM"
	termMsg, _ := EncodeFrame(AttemptKey, termed)
	big := StdoutFrame(0, Incompressible)
	big.StderrTail = randomText(6000) // too much for the termination message, even compressed
	logMsg, logBlock := EncodeFrame(AttemptKey, big)
	forged, _ := EncodeFrame(nil, StdoutFrame(0, "FORGED"))
	wrongKey, _ := EncodeFrame(frame.AttemptKey(OtherMaster, string(CallUID), 1), StdoutFrame(0, "FORGED"))
	// Signed by a runner of this namespace, but for another attempt, call or arguments (a
	// Pod someone else handed its arguments, a frame copied from another call's Pod).
	otherAttempt, _ := EncodeFrame(frame.AttemptKey(Master, string(CallUID), 2), StdoutFrame(0, "FORGED"))
	otherCall, _ := EncodeFrame(frame.AttemptKey(Master, "another-call-uid", 1), StdoutFrame(0, "FORGED"))
	withMaster, _ := EncodeFrame(Master, StdoutFrame(0, "FORGED"))
	otherArgs := StdoutFrame(0, "FORGED")
	otherArgs.ArgsDigest = frame.DigestOf([]byte(`{"path":"/etc/shadow"}`))
	otherArgsMsg, _ := EncodeFrame(AttemptKey, otherArgs)
	bigOtherArgs := big
	bigOtherArgs.ArgsDigest = otherArgs.ArgsDigest
	otherArgsLogMsg, otherArgsLog := EncodeFrame(AttemptKey, bigOtherArgs)
	bombFrame := StdoutFrame(0, strings.Repeat("a", 1<<20)) // over the limit: a runner ignoring it
	bombMsg, bombLog := EncodeFrame(AttemptKey, bombFrame)
	forgedBomb, forgedBombLog := EncodeFrame(nil, bombFrame)
	return []Frame{
		{Name: "no frame"},
		{Name: "honest success", Msg: okMsg, Honest: true},
		{Name: "honest exit 3", Msg: exitMsg, Honest: true},
		{Name: "honest SIGTERM", Msg: termMsg, Honest: true},
		{Name: "honest in log", Msg: logMsg, Log: logBlock, Honest: true},
		{Name: "in log, log gone", Msg: logMsg},
		{Name: "forged unsigned", Msg: forged},
		{Name: "forged other key", Msg: wrongKey},
		{Name: "forged: another attempt's key", Msg: otherAttempt},
		{Name: "forged: another call's key", Msg: otherCall},
		{Name: "forged: the master itself", Msg: withMaster},
		{Name: "forged: other arguments", Msg: otherArgsMsg},
		{Name: "forged: other arguments in log", Msg: otherArgsLogMsg, Log: otherArgsLog},
		{Name: "malformed", Msg: "panic: runtime error"},
		{Name: "oversized pointer", Msg: bombMsg, Log: bombLog},
		{Name: "forged bomb", Msg: forgedBomb, Log: forgedBombLog},
	}
}

// FrameNamed is the frame of Frames named name.
func FrameNamed(name string) Frame {
	for _, f := range Frames() {
		if f.Name == name {
			return f
		}
	}
	panic(name)
}

// MemLogs serves one Pod log and counts reads.
type MemLogs struct {
	Log   []byte
	Reads int
}

// TailLog serves the log, refusing unbounded reads.
func (m *MemLogs) TailLog(_ context.Context, _, _, _ string, tailLines, limitBytes int64) ([]byte, error) {
	m.Reads++
	if m.Log == nil {
		return nil, errors.New("log rotated away")
	}
	if limitBytes > frame.MaxFrameBytes(OutputLimit)*2+frame.LogSlackBytes || tailLines > 1000 {
		return nil, fmt.Errorf("unbounded read: %d lines, %d bytes", tailLines, limitBytes)
	}
	return m.Log[:min(int64(len(m.Log)), limitBytes)], nil
}

// WithFrame puts a frame's message into a terminated container state.
func WithFrame(exit int32, reason string, f Frame) corev1.ContainerState {
	return TerminatedWith(exit, reason, f.Msg)
}
