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

package pipeline

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxOutputBytes is the default limit on a tool's output (1 MiB).
const DefaultMaxOutputBytes = 1 << 20

// maxStderrTail bounds the stderr excerpt copied into an error result.
const maxStderrTail = 2 << 10

// Keys of Result.Meta. Only facts about this call's output and attempt go there, never
// host configuration (timeouts, images, resources, policies).
const (
	MetaAttempt     = "attempt"
	MetaExitCode    = "exitCode"
	MetaOutputBytes = "outputBytes"
	MetaTruncated   = "truncated"
	MetaRedacted    = "redacted"
	// MetaKubernetesReason is the Kubernetes reason of an ending the operator could not
	// read (ExecutionLost, ResultUnreadable), e.g. "BackoffLimitExceeded", or the API
	// server's reason (e.g. Forbidden, Invalid) for a Job it refused (ExecutionRejected).
	MetaKubernetesReason = "kubernetesReason"
	// MetaContainerExitCode is the tool container's exit code as the kubelet reported it,
	// for such an ending: what Kubernetes saw, not what the runner vouched for.
	MetaContainerExitCode = "containerExitCode"
	// MetaOutputLeftOpen is "true" when a process the body left behind kept its output open
	// after the body ended: the runner stopped reading after a grace period, so output
	// written later is missing.
	MetaOutputLeftOpen = "outputLeftOpen"
	// MetaRedactions is how many credential values the runner redacted from the body's
	// output (a count, never what), when it redacted any.
	MetaRedactions = "redactions"
)

// Termination reasons the controllers pass in Outcome.TerminationReason (kubelet and
// Job controller vocabulary).
const (
	TerminationDeadlineExceeded = "DeadlineExceeded"
	TerminationOOMKilled        = "OOMKilled"
	TerminationEvicted          = "Evicted"
	TerminationJobDeleted       = "JobDeleted"
	TerminationPodDeleted       = "PodDeleted"
	// TerminationCredentialMissing: the kubelet could not start the tool container because
	// a Secret or key its credentials name does not exist (CreateContainerConfigError).
	TerminationCredentialMissing = "CredentialMissing"
	// TerminationCredentialTooShort: the operator did not start the body because a
	// credential it reads itself (an egress credential the proxy injects) is shorter than
	// the runner can redact, the rule the runner applies to the body's own
	// (RunnerCredentialTooShort).
	TerminationCredentialTooShort = "CredentialTooShort"
)

// RunnerCredentialTooShort is the runner's frame reason (pkg/frame.ReasonCredentialTooShort)
// for a credential too short to redact: the body did not run.
const RunnerCredentialTooShort = "CredentialTooShort"

const credentialTooShortMessage = "the tool could not be started: a credential it is given is too short to redact from its output"

// imageFailures are container waiting reasons meaning the body never started, and the
// terminated reasons of a container the runtime could not start (StartError: an
// entrypoint for another architecture, missing or not executable; Docker's
// ContainerCannotRun), whose message is the runtime's error, never a frame.
var imageFailures = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "ImageInspectError": true, "RegistryUnavailable": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"StartError": true, "ContainerCannotRun": true,
}

// knownTerminations are the reasons Normalize maps to a result of their own; any other
// reason is only reported (in meta) and cannot by itself end a call well.
var knownTerminations = map[string]bool{
	TerminationDeadlineExceeded: true, TerminationOOMKilled: true, TerminationEvicted: true,
	TerminationJobDeleted: true, TerminationPodDeleted: true,
}

// Outcome is what the controller observed of one execution attempt. Only a Report — the
// runner's frame, verified against the attempt's key — carries an exit code or output:
// without one, no outcome can be a success.
type Outcome struct {
	// TerminationReason is the Job, Pod or container reason, e.g. "DeadlineExceeded",
	// "OOMKilled", "Evicted", "ImagePullBackOff", "JobDeleted", "PodDeleted", which
	// decide the result whatever the Report says; any other ("Completed", "Error",
	// "BackoffLimitExceeded", "NodeShutdown") defers to the Report and, without one, is
	// reported in meta of an ExecutionLost result.
	TerminationReason string
	// Report is the runner's account of the body's run, from a frame whose signature the
	// operator verified. nil: the operator holds no account it can trust.
	Report *Report
	// Unreadable, when set, says why a frame was present but could not be verified,
	// bounded or decoded (for the operator's log; the result says ResultUnreadable).
	Unreadable string
	// Detail says, for the call's Executed condition where the platform team looks (never for
	// the result the agent reads), who ended the attempt and in their words, e.g. the
	// kubelet's `kubelet: secret "github" not found` for CredentialMissing, or the operator's
	// own account of an attempt whose Job it never created.
	Detail string
	// ContainerExitCode is the tool container's exit code as the kubelet reported it, if
	// it terminated. It never decides a result; it is reported when the ending is lost.
	ContainerExitCode *int32
	// Attempt is the 1-based attempt number.
	Attempt int
	// Started is true once the tool container ran. When false, the outcome is
	// ImageNeverStarted for a known or empty reason (unless the Job or Pod was deleted).
	Started bool
}

// Report is what the runner vouched for: how the body ended and what it printed.
type Report struct {
	// ExitCode of the body (the runner's: 128+N after signal N, 125..127 for its own).
	ExitCode int
	// Signal that ended the body, if any (e.g. "SIGKILL").
	Signal string
	// Stdout is the output the runner kept (a prefix when StdoutTruncated).
	Stdout []byte
	// StdoutTruncated is true when the runner kept only a prefix of the output.
	StdoutTruncated bool
	// StdoutTotalBytes is how much the body wrote in all; it counts only when
	// StdoutTruncated (otherwise the output is len(Stdout) bytes).
	StdoutTotalBytes int64
	// StderrTail is the end of the body's stderr (or the runner's own error).
	StderrTail string
	// OutputLeftOpen: a process the body left behind held stdout or stderr open after the
	// body ended, and the runner stopped reading (MetaOutputLeftOpen).
	OutputLeftOpen bool
	// Redactions is how many credential values the runner redacted (MetaRedactions).
	Redactions int64
	// RunnerReason is the runner's own failure reason, when the body did not run (e.g.
	// RunnerCredentialTooShort); empty when the body ran.
	RunnerReason string
}

// NormalizeOptions configures Normalize. Zero fields take the defaults.
type NormalizeOptions struct {
	// MaxOutputBytes is the largest output kept; default DefaultMaxOutputBytes.
	MaxOutputBytes int
	// AcceptTruncated turns a truncated plain-text output into a successful result
	// (reason OutputTruncated, meta truncated=true) instead of an OutputTooLarge error.
	AcceptTruncated bool
}

// Result is the structured result of a call, what the model sees.
type Result struct {
	// OK is true when the call succeeded end to end; it is always !IsError.
	OK bool
	// IsError is true for every failure, whatever the stage.
	IsError bool
	// Content is a JSON value: a string for plain-text output, the decoded value for
	// JSON output (json.Number numbers), or an error message.
	Content any
	// Error is a one-line summary of the failure ("" when OK).
	Error string
	// Reason is the machine-readable cause (ReasonSucceeded when OK).
	Reason Reason
	// Meta holds facts about the output: attempt, exitCode, outputBytes, truncated, redacted.
	Meta map[string]string
}

// Normalize turns an execution outcome into a Result. Every failure shape becomes an
// isError result with a precise reason; messages name what happened, never host
// configuration. Known termination reasons take precedence over the runner's report (an
// OOM kill also exits 137); without a verified report the result is ExecutionLost or
// ResultUnreadable, never a success, and nothing the sandbox wrote reaches it. Output
// is parsed as JSON when it starts with '{' or '[' and is valid JSON; otherwise it is
// plain text. A JSON object with "isError": true is honoured as a tool error.
func Normalize(o Outcome, opts NormalizeOptions) Result {
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	meta := map[string]string{MetaAttempt: strconv.Itoa(max(o.Attempt, 1))}
	if r, msg, ok := terminated(o); ok {
		return failed(r, msg, meta)
	}
	if o.Report == nil {
		return lost(o, meta)
	}
	if o.Report.OutputLeftOpen {
		meta[MetaOutputLeftOpen] = "true"
	}
	if o.Report.Redactions > 0 {
		meta[MetaRedactions] = strconv.FormatInt(o.Report.Redactions, 10)
	}
	if o.Report.RunnerReason == RunnerCredentialTooShort {
		return failed(ReasonCredentialTooShort, credentialTooShortMessage, meta)
	}
	if o.Report.ExitCode != 0 || o.Report.Signal != "" {
		// A signal means the tool did not end by itself, whatever exit code came with it.
		return exitFailure(*o.Report, opts, meta)
	}
	return output(*o.Report, opts, meta)
}

// lost is the result of an ending the operator could not read: no verified frame.
func lost(o Outcome, meta map[string]string) Result {
	if r := reasonToken(o.TerminationReason); r != "" {
		meta[MetaKubernetesReason] = r
	}
	if o.ContainerExitCode != nil {
		meta[MetaContainerExitCode] = strconv.Itoa(int(*o.ContainerExitCode))
	}
	if o.Unreadable != "" {
		return failed(ReasonResultUnreadable, "the tool's result could not be read", meta)
	}
	return failed(ReasonExecutionLost, "the tool's execution ended without a result", meta)
}

// reasonToken keeps a Kubernetes reason (CamelCase) as at most 64 letters and digits.
func reasonToken(r string) string {
	var b strings.Builder
	for _, c := range r {
		if b.Len() == 64 {
			break
		}
		if c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// terminated maps infrastructure failures; ok is false when the runner's report decides.
func terminated(o Outcome) (Reason, string, bool) {
	switch r := o.TerminationReason; {
	case r == TerminationCredentialMissing:
		return ReasonCredentialMissing, "the tool could not be started: a Secret or key its credentials name is missing in this namespace", true
	case r == TerminationCredentialTooShort:
		return ReasonCredentialTooShort, credentialTooShortMessage, true
	case r == TerminationJobDeleted || r == TerminationPodDeleted:
		return ReasonJobDeleted, "the tool's execution was deleted before it finished", true
	case imageFailures[r] || !o.Started && (r == "" || knownTerminations[r]):
		return ReasonImageNeverStarted, "the tool could not be started", true
	case r == TerminationDeadlineExceeded:
		return ReasonDeadlineExceeded, "the tool exceeded its time limit and was stopped", true
	case r == TerminationOOMKilled:
		return ReasonOOMKilled, "the tool ran out of memory and was stopped", true
	case r == TerminationEvicted:
		return ReasonEvicted, "the tool was evicted before it finished", true
	}
	return "", "", false
}

func exitFailure(o Report, opts NormalizeOptions, meta map[string]string) Result {
	meta[MetaExitCode] = strconv.Itoa(o.ExitCode)
	summary := fmt.Sprintf("the tool exited with code %d", o.ExitCode)
	if o.Signal != "" {
		summary = fmt.Sprintf("the tool was terminated by signal %s", sanitize(o.Signal, 32))
	}
	if tail := sanitize(o.StderrTail, maxStderrTail); tail != "" {
		summary += ": " + tail
	}
	r := failed(ReasonNonZeroExit, summary, meta)
	// Keep what the tool printed when it is usable: it usually explains the failure.
	if len(o.Stdout) > 0 && !o.StdoutTruncated && len(o.Stdout) <= opts.MaxOutputBytes && utf8.Valid(o.Stdout) {
		meta[MetaOutputBytes] = strconv.Itoa(len(o.Stdout))
		r.Content = parseBody(o.Stdout, opts)
	}
	return r
}

func output(o Report, opts NormalizeOptions, meta map[string]string) Result {
	total := int64(len(o.Stdout)) // the runner's count matters only for what it cut
	if o.StdoutTruncated {
		total = max(o.StdoutTotalBytes, total)
	}
	meta[MetaOutputBytes] = strconv.FormatInt(total, 10)
	body := o.Stdout
	if o.StdoutTruncated {
		body = trimPartialRune(body)
	}
	switch {
	case len(o.Stdout) > opts.MaxOutputBytes:
		return failed(ReasonOutputTooLarge, fmt.Sprintf("the tool's output (%d bytes) is over the output limit", total), meta)
	case !utf8.Valid(body):
		return failed(ReasonOutputNotUTF8, "the tool's output is not valid UTF-8 text", meta)
	case o.StdoutTruncated && !opts.AcceptTruncated:
		meta[MetaTruncated] = "true"
		return failed(ReasonOutputTooLarge, fmt.Sprintf("the tool's output (%d bytes) is over the output limit", total), meta)
	case o.StdoutTruncated:
		meta[MetaTruncated] = "true"
		return Result{OK: true, Content: string(body), Reason: ReasonOutputTruncated, Meta: meta}
	}
	content := parseBody(body, opts)
	if obj, ok := content.(map[string]any); ok && obj["isError"] == true {
		return Result{IsError: true, Content: content, Error: toolErrorMessage(obj), Reason: ReasonToolError, Meta: meta}
	}
	return Result{OK: true, Content: content, Reason: ReasonSucceeded, Meta: meta}
}

// parseBody returns the decoded JSON when body is a JSON object or array, else the text.
func parseBody(body []byte, opts NormalizeOptions) any {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if doc, err := parseJSON(body, FreezeOptions{MaxBytes: opts.MaxOutputBytes}, false); err == nil {
			return doc.Value
		}
	}
	return string(body)
}

// toolErrorMessage picks the body's own error text, if it has one.
func toolErrorMessage(obj map[string]any) string {
	for _, k := range []string{"error", "message"} {
		if s, ok := obj[k].(string); ok && s != "" {
			return sanitize(s, maxStderrTail)
		}
	}
	return "the tool reported an error"
}

func failed(r Reason, msg string, meta map[string]string) Result {
	return Result{IsError: true, Content: msg, Error: msg, Reason: r, Meta: meta}
}

// trimPartialRune drops an incomplete UTF-8 sequence that truncation left at the end.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// sanitize makes s valid, trimmed UTF-8 of at most n bytes, keeping its end.
func sanitize(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > n {
		s = s[len(s)-n:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s
}
