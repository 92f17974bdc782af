package warmexec

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The endings every executor must read alike: the tool Pod's state as the kubelet reports
// it, whatever made the Pod (a Job, a warm pool). Each executor's test sets the ending up
// on its own backend and observes it through the executor interface.
type ending struct {
	name  string
	phase corev1.PodPhase
	// reason is the Pod's own (DeadlineExceeded, Evicted).
	reason string
	state  corev1.ContainerState
	log    []byte
	// pastDeadline: the operator's own deadline for the attempt has passed.
	pastDeadline bool
	// want is the normalised reason; "" when the attempt has not ended.
	want pipeline.Reason
}

func endings() []ending {
	honest, exit3, inLog := executortest.FrameNamed("honest success"), executortest.FrameNamed("honest exit 3"), executortest.FrameNamed("honest in log")
	return []ending{
		{name: "still running", phase: corev1.PodRunning, state: executortest.Running()},
		{name: "honest success", phase: corev1.PodSucceeded, state: executortest.WithFrame(0, "Completed", honest), want: pipeline.ReasonSucceeded},
		{name: "honest exit 3", phase: corev1.PodFailed, state: executortest.WithFrame(3, "Error", exit3), want: pipeline.ReasonNonZeroExit},
		{name: "honest result in the log", phase: corev1.PodSucceeded, state: executortest.WithFrame(0, "Completed", inLog), log: inLog.Log,
			want: pipeline.ReasonSucceeded},
		{name: "exit 0 without a frame", phase: corev1.PodSucceeded, state: executortest.TerminatedWith(0, "Completed", ""),
			want: pipeline.ReasonExecutionLost},
		{name: "forged frame", phase: corev1.PodSucceeded, state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged unsigned")),
			want: pipeline.ReasonResultUnreadable},
		{name: "frame signed with another key", phase: corev1.PodSucceeded,
			state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged other key")), want: pipeline.ReasonResultUnreadable},
		{name: "frame signed for another attempt", phase: corev1.PodSucceeded,
			state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged: another attempt's key")), want: pipeline.ReasonResultUnreadable},
		{name: "frame signed for another call", phase: corev1.PodSucceeded,
			state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged: another call's key")), want: pipeline.ReasonResultUnreadable},
		{name: "frame for other arguments", phase: corev1.PodSucceeded,
			state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged: other arguments")), want: pipeline.ReasonResultUnreadable},
		{name: "frame for other arguments, in the log", phase: corev1.PodSucceeded,
			state: executortest.WithFrame(0, "Completed", executortest.FrameNamed("forged: other arguments in log")), log: executortest.FrameNamed("forged: other arguments in log").Log,
			want: pipeline.ReasonResultUnreadable},
		{name: "OOM kill", phase: corev1.PodFailed, state: executortest.TerminatedWith(137, "OOMKilled", ""), want: pipeline.ReasonOOMKilled},
		{name: "Pod deadline", phase: corev1.PodFailed, reason: pipeline.TerminationDeadlineExceeded,
			state: executortest.WithFrame(143, "Error", exit3), want: pipeline.ReasonDeadlineExceeded},
		{name: "evicted", phase: corev1.PodFailed, reason: pipeline.TerminationEvicted,
			state: executortest.TerminatedWith(137, "Error", ""), want: pipeline.ReasonEvicted},
		{name: "image never pulled", phase: corev1.PodPending, state: executortest.Waiting("ErrImageNeverPull"),
			want: pipeline.ReasonImageNeverStarted},
		{name: "past the operator's deadline, nobody reported", phase: corev1.PodRunning, state: executortest.Running(),
			pastDeadline: true, want: pipeline.ReasonDeadlineExceeded},
	}
}

// execWorld is the fake cluster an executor observes, and its clock.
type execWorld struct {
	call  *v1alpha1.ToolCall
	clock *clocktesting.FakeClock
	objs  []client.Object
	logs  *executortest.MemLogs
}

func newExecWorld(e ending) *execWorld {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: executortest.CallUID},
		Spec: v1alpha1.ToolCallSpec{Tool: "t"}}
	call.Status.Phase = v1alpha1.PhaseRunning
	call.Status.ArgumentsDigest = executortest.Digest
	call.Status.Tool = &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "t", Spec: executortest.OutcomeSpec.DeepCopy()}
	call.Status.Attempts = []v1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: start}}}
	now := start.Add(time.Second)
	if e.pastDeadline {
		now = start.Add(time.Hour)
	}
	return &execWorld{call: call, clock: clocktesting.NewFakeClock(now), logs: &executortest.MemLogs{Log: e.log},
		objs: []client.Object{frameKeySecret(executortest.MasterText)}}
}

// frameKeySecret is the frame key Secret of namespace "ns": master, and a previous one.
func frameKeySecret(master string, previous ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: podcontract.FrameKeySecret, Namespace: "ns"},
		Data: map[string][]byte{podcontract.FrameKeySecretKey: []byte(master)}}
	if len(previous) > 0 {
		s.Data[podcontract.FrameKeySecretPrevious] = []byte(previous[0])
	}
	return s
}

func (w *execWorld) env(t *testing.T) execenv.Env {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(w.objs...).
		WithIndex(&batchv1.Job{}, executor.IndexCallName, executor.ByCall).
		WithIndex(&corev1.Pod{}, executor.IndexCallName, executor.ByCall).Build()
	return executortest.WithFeatures(execenv.Env{Client: c, APIReader: c, Scheme: scheme, Clock: w.clock, Logs: w.logs, Options: options.DefaultCall(),
		Isolate: func(context.Context, *v1alpha1.ToolCall, map[string]string) (string, error) { return "", nil },
		Keys:    framekeys.New(c, c, w.clock)})
}

// endedAs normalises what an executor's observe came to ("" when the attempt runs on).
func endedAs(t *testing.T, st executor.Step, err error) pipeline.Reason {
	t.Helper()
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	if st.Refused != nil {
		t.Fatalf("observe refused the attempt: %+v", *st.Refused)
	}
	if st.Outcome == nil {
		return ""
	}
	return pipeline.Normalize(*st.Outcome, pipeline.NormalizeOptions{MaxOutputBytes: executortest.OutputLimit}).Reason
}

// The Job executor reads every ending from the attempt's Job and Pod.
func TestJobExecutorEndings(t *testing.T) {
	for _, e := range endings() {
		t.Run(e.name, func(t *testing.T) {
			w := newExecWorld(e)
			job := executortest.JobWith()
			job.Name, job.UID = podspec.JobName("c", 1), "job-uid"
			job.Annotations[podcontract.AnnotationCallName] = "c"
			job.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall",
				Name: "c", UID: w.call.UID, Controller: new(true)}}
			pod := executortest.PodWith(e.phase, e.reason, e.state)
			pod.Annotations = map[string]string{podcontract.AnnotationCallName: "c"}
			pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name,
				UID: job.UID, Controller: new(true)}}
			w.objs = append(w.objs, job, pod)
			j := jobexec.New(w.env(t))
			where, ok := j.Claim(context.Background(), w.call, &w.call.Status.Attempts[0])
			if !ok || where != "Job "+job.Name {
				t.Fatalf("claim = %q, %v; want the attempt's Job", where, ok)
			}
			st, err := j.Observe(context.Background(), w.call)
			if got := endedAs(t, st, err); got != e.want {
				t.Errorf("ended %q, want %q", got, e.want)
			}
		})
	}
}

// The warm executor reads every ending from its claimed Pod when no attach stream vouched
// for an outcome (an operator restarted while the body ran, or a body killed by the
// kubelet), exactly as the Job executor does.
func TestWarmExecutorEndings(t *testing.T) {
	for _, e := range endings() {
		t.Run(e.name, func(t *testing.T) {
			w := newExecWorld(e)
			pod := claimedWarmPod(w.call)
			pod.Status.Phase, pod.Status.Reason = e.phase, e.reason
			pod.Status.ContainerStatuses = executortest.StatusesFor(e.state)
			w.objs = append(w.objs, pod)
			x := New(w.env(t), stubAttach{})
			// The stream of this process ended without a result line (the body was killed).
			ranStream(x, w.call, WarmStream{HandedOver: w.clock.Now()})
			st, err := x.Observe(context.Background(), w.call)
			if got := endedAs(t, st, err); got != e.want {
				t.Errorf("ended %q, want %q", got, e.want)
			}
		})
	}
}

// ranStream has x run the call's handover, its stream ended as stream, and waits for its
// end.
func ranStream(x *Executor, call *v1alpha1.ToolCall, stream WarmStream) {
	x.runs.Start(call, "", func() (WarmStream, error) { return stream, nil })
	<-x.Wakeups()
}

// A warm attempt's outcome comes from the attach stream's result line as soon as the body
// ended, when the line verifies with the Pod's key and names the call's arguments;
// otherwise the Pod decides.
func TestWarmExecutorStream(t *testing.T) {
	honest := executortest.FrameNamed("honest success")
	lost := executortest.StdoutFrame(frame.ExitRunnerError, "")
	lost.Reason, lost.Error = frame.ReasonBodyLost, "gone"
	lostMsg, _ := executortest.EncodeFrame(executortest.AttemptKey, lost)
	cases := []struct {
		name string
		line string
		want pipeline.Reason
	}{
		{name: "signed line", line: honest.Msg, want: pipeline.ReasonSucceeded},
		{name: "forged line, Pod still running", line: executortest.FrameNamed("forged unsigned").Msg},
		{name: "line for other arguments, Pod still running", line: executortest.FrameNamed("forged: other arguments").Msg},
		{name: "line of another attempt, Pod still running", line: executortest.FrameNamed("forged: another attempt's key").Msg},
		{name: "no line, Pod still running"},
		// The signer vouches only that the body side went away: the Pod's account decides.
		{name: "a signed BodyLost line, Pod still running", line: lostMsg},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newExecWorld(ending{})
			pod := claimedWarmPod(w.call)
			pod.Status.Phase = corev1.PodRunning
			pod.Status.ContainerStatuses = executortest.StatusesFor(executortest.Running())
			w.objs = append(w.objs, pod)
			x := New(w.env(t), stubAttach{})
			tail := []byte("body output\n")
			if tc.line != "" {
				tail = append(tail, frame.ResultLine([]byte(tc.line))...)
			}
			ranStream(x, w.call, WarmStream{HandedOver: w.clock.Now(), StdoutTail: tail})
			st, err := x.Observe(context.Background(), w.call)
			if got := endedAs(t, st, err); got != tc.want {
				t.Errorf("ended %q, want %q", got, tc.want)
			}
			if tc.want != "" && w.call.Status.Attempts[0].HandoverTime == nil {
				t.Error("the handover time is recorded on the attempt")
			}
		})
	}
}

// claimedWarmPod is a pool Pod of the call's tool, claimed by the call's attempt 1.
func claimedWarmPod(call *v1alpha1.ToolCall) *corev1.Pod {
	tool := &v1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns", UID: "tool-uid"}}
	tool.Spec.ToolSpec = *call.Status.Tool.Spec
	pod := warmpool.BuildPod(warmpool.ToolPool(tool, 1), podspec.DefaultOptions())
	pod.Name, pod.UID = "t-warm-abcde", "pod-uid"
	delete(pod.Labels, podcontract.LabelPool)
	pod.Labels[podcontract.LabelAttempt] = "1"
	pod.Annotations[podcontract.AnnotationClaimedBy] = string(call.UID)
	pod.Annotations[podcontract.AnnotationCallName] = call.Name
	a := &call.Status.Attempts[0]
	a.Path, a.PodName = v1alpha1.PathWarm, pod.Name
	return pod
}

// stubAttach is a WarmExecutor that is never reached (the tests start runs themselves).
type stubAttach struct{}

func (stubAttach) Handover(context.Context, types.NamespacedName, []byte) (WarmStream, error) {
	return WarmStream{}, nil
}
