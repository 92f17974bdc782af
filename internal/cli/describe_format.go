package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/display"
)

// describeView is everything `describe` shows about one call. Related objects the caller
// may not read are left out, with a note saying why.
type describeView struct {
	Call     *v1alpha1.ToolCall
	Approval *v1alpha1.ToolCallApproval
	Job      *batchv1.Job
	Pods     []corev1.Pod
	Events   []corev1.Event
	Notes    []string
}

// formatDescribe renders a describeView as kubectl describe does: fields, then sections.
func formatDescribe(v describeView, now time.Time) string {
	var b strings.Builder
	b.WriteString(describeHeader(v.Call, now))
	sections := []struct{ title, body string }{
		{"Tool", describeTool(v.Call.Status.Tool)},
		{argumentsTitle(v.Call), indent(showJSON(v.Call.Spec.Arguments.Raw), "  ")},
		{"Timeline", indent(timeline(v.Call.CreationTimestamp.Time, v.Call.Status.Conditions), "  ")},
		{"Approval", describeApproval(v.Call, v.Approval)},
		{resultTitle(v.Call), describeResult(v.Call.Status.Result)},
		{"Attempts", describeAttempts(v.Call.Status.Attempts)},
		{"Job", describeJob(v.Call, v.Job)},
		{"Pods", describePods(v.Pods)},
		{"Events", describeEvents(v.Events, now)},
		{"Notes", describeNotes(v.Notes)},
	}
	for _, s := range sections {
		if s.body != "" {
			fmt.Fprintf(&b, "%s:\n%s", s.title, s.body)
		}
	}
	return b.String()
}

func describeHeader(call *v1alpha1.ToolCall, now time.Time) string {
	created := call.CreationTimestamp.UTC().Format(time.RFC3339)
	rows := [][]string{
		{"Name:", call.Name},
		{"Namespace:", call.Namespace},
		{"Tool:", call.Spec.Tool},
		{"Scope:", scopeName(call.Spec.Scope)},
		{"Session:", orNone(call.Spec.Session)},
		{"Requester:", call.Spec.Requester},
		{"Created:", fmt.Sprintf("%s (%s ago)", created, age(call.CreationTimestamp.Time, now))},
		{"Phase:", phaseOf(call)},
		{"Verdict:", orNone(string(call.Status.Verdict))},
		{"Duration:", orNone(call.Status.Duration)},
	}
	return fieldList(rows, "")
}

// fieldList lays out "Label: value" rows with aligned values, each line prefixed; each
// value is shown as one line (display.Line).
func fieldList(rows [][]string, prefix string) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s%-*s %s\n", prefix, width, r[0], display.Line(r[1]))
	}
	return b.String()
}

func scopeName(scope string) string {
	if scope == "" {
		return "<namespace>"
	}
	return scope
}

// describeTool shows the snapshot of the tool the call was admitted with.
func describeTool(t *v1alpha1.ToolSnapshot) string {
	if t == nil {
		return "  <not resolved yet>\n"
	}
	rows := [][]string{
		{"Kind:", string(t.Kind)},
		{"Object:", t.Name},
		{"Registered in:", registeredIn(t)},
		{"Spec digest:", orNone(t.SpecDigest)},
		{"Generation:", strconv.FormatInt(t.Generation, 10)},
	}
	if s := t.Spec; s != nil {
		rows = append(rows,
			[]string{"Image:", s.Body.Image},
			[]string{"Timeout:", durationOrDefault(s.Timeout)},
			[]string{"Concurrency safe:", strconv.FormatBool(s.ConcurrencySafe)},
			[]string{"Read only:", strconv.FormatBool(s.ReadOnly)})
	}
	return fieldList(rows, "  ")
}

func registeredIn(t *v1alpha1.ToolSnapshot) string {
	if t.Kind == v1alpha1.ToolKindClusterTool {
		return "<cluster>"
	}
	return scopeName(t.Scope)
}

func durationOrDefault(d *metav1.Duration) string {
	if d == nil {
		return "<default>"
	}
	return d.Duration.String()
}

func argumentsTitle(call *v1alpha1.ToolCall) string {
	if call.Status.ArgumentsDigest == "" {
		return "Arguments"
	}
	return "Arguments (" + call.Status.ArgumentsDigest + ")"
}

func resultTitle(call *v1alpha1.ToolCall) string {
	if call.Status.ResultDigest == "" {
		return "Result"
	}
	return "Result (" + call.Status.ResultDigest + ")"
}

// describeApproval shows the approval asked for and the answer given, if any.
func describeApproval(call *v1alpha1.ToolCall, a *v1alpha1.ToolCallApproval) string {
	var rows [][]string
	if d := call.Status.ApprovalDeadline; d != nil {
		rows = append(rows, []string{"Deadline:", d.UTC().Format(time.RFC3339)})
	}
	if a != nil {
		rows = append(rows, []string{"Decision:", fmt.Sprintf("%s by %s", a.Spec.Decision, a.Spec.Approver)})
		if a.Spec.CallUID != string(call.UID) {
			// An earlier call of the same name left it: it does not answer this call.
			rows = append(rows, []string{"Answers:", fmt.Sprintf("another call (uid %s), not this one (uid %s): it does not count",
				orNone(a.Spec.CallUID), call.UID)})
		}
		if a.Spec.Reason != "" {
			rows = append(rows, []string{"Reason:", a.Spec.Reason})
		}
		consumed := "<not yet>"
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionConsumed); c != nil {
			consumed = fmt.Sprintf("%s (%s)", c.Status, c.Reason)
		}
		rows = append(rows, []string{"Consumed:", consumed})
	}
	if len(rows) == 0 {
		return ""
	}
	return fieldList(rows, "  ")
}

// describeResult shows the frozen result: ok or the error, its meta and content.
func describeResult(r *v1alpha1.ToolResult) string {
	if r == nil {
		return "  <none yet>\n"
	}
	rows := [][]string{{"OK:", strconv.FormatBool(r.OK)}, {"Is error:", strconv.FormatBool(r.IsError)}}
	if r.Reason != "" {
		rows = append(rows, []string{"Reason:", r.Reason})
	}
	if r.Error != "" {
		rows = append(rows, []string{"Error:", r.Error})
	}
	if m := strings.TrimSpace(strings.TrimPrefix(formatMeta(r.Meta), "result meta: ")); m != "" {
		rows = append(rows, []string{"Meta:", m})
	}
	out := fieldList(rows, "  ")
	if r.Content != nil && len(r.Content.Raw) > 0 {
		out += "  Content:\n" + indent(showJSON(r.Content.Raw), "    ")
	}
	return out
}

func describeAttempts(attempts []v1alpha1.Attempt) string {
	if len(attempts) == 0 {
		return ""
	}
	return indent(table([]string{"ATTEMPT", "PATH", "JOB", "STARTED", "TOOK", "REASON"}, attemptRows(attempts)), "  ")
}

// attemptRows are the Attempts table's rows.
func attemptRows(attempts []v1alpha1.Attempt) [][]string {
	rows := make([][]string, 0, len(attempts))
	for _, a := range attempts {
		took := ""
		if a.StartTime != nil && a.CompletionTime != nil {
			took = formatOffset(a.CompletionTime.Sub(a.StartTime.Time))
		}
		started := ""
		if a.StartTime != nil {
			started = a.StartTime.UTC().Format(time.RFC3339)
		}
		path, runsIn := "cold", a.JobName
		if a.Path == v1alpha1.PathWarm {
			path, runsIn = "warm", "pod/"+a.PodName // a claimed pool Pod, no Job
		}
		rows = append(rows, []string{strconv.Itoa(int(a.Attempt)), path, runsIn, started, took, a.Reason})
	}
	return rows
}

// describeJob names the current Job and its state, when there is one.
func describeJob(call *v1alpha1.ToolCall, job *batchv1.Job) string {
	if call.Status.Job == nil {
		return ""
	}
	state := "<not found: finished Jobs are deleted after ttlSecondsAfterFinished>"
	if job != nil {
		state = jobState(job)
	}
	return fieldList([][]string{{"Name:", call.Status.Job.Name}, {"State:", state}}, "  ")
}

func jobState(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return "Complete"
		case batchv1.JobFailed:
			return "Failed (" + c.Reason + ")"
		}
	}
	if job.Status.Active > 0 {
		return "Active"
	}
	return "Pending"
}

func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return ""
	}
	return indent(table([]string{"NAME", "ATTEMPT", "PHASE", "TOOL CONTAINER"}, podRows(pods)), "  ")
}

// podRows are the Pods table's rows.
func podRows(pods []corev1.Pod) [][]string {
	rows := make([][]string, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		rows = append(rows, []string{p.Name, p.Labels[v1alpha1.LabelAttempt], string(p.Status.Phase), containerState(p)})
	}
	return rows
}

// containerState summarises the tool container: waiting, running or how it terminated.
func containerState(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != v1alpha1.ToolContainerName {
			continue
		}
		switch s := cs.State; {
		case s.Terminated != nil:
			return fmt.Sprintf("Terminated: %s (exit %d)", s.Terminated.Reason, s.Terminated.ExitCode)
		case s.Running != nil:
			return "Running"
		case s.Waiting != nil:
			return "Waiting: " + s.Waiting.Reason
		}
	}
	return "<no status>"
}

func describeEvents(events []corev1.Event, now time.Time) string {
	if len(events) == 0 {
		return ""
	}
	return indent(table([]string{"TYPE", "REASON", "AGE", "MESSAGE"}, eventRows(events, now)), "  ")
}

// eventRows are the Events table's rows, oldest first.
func eventRows(events []corev1.Event, now time.Time) [][]string {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b corev1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	rows := make([][]string, 0, len(sorted))
	for i := range sorted {
		e := &sorted[i]
		rows = append(rows, []string{e.Type, e.Reason, age(eventTime(e), now), e.Message})
	}
	return rows
}

// eventTime is when an event last happened, from whichever field its API version filled.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.FirstTimestamp.Time
}

func describeNotes(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	shown := make([]string, len(notes))
	for i, n := range notes {
		shown[i] = display.Line(n)
	}
	return indent(strings.Join(shown, "\n"), "  ")
}
