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
)

// Termination reasons the controllers pass in Outcome.TerminationReason (kubelet and
// Job controller vocabulary).
const (
	TerminationDeadlineExceeded = "DeadlineExceeded"
	TerminationOOMKilled        = "OOMKilled"
	TerminationEvicted          = "Evicted"
	TerminationJobDeleted       = "JobDeleted"
	TerminationPodDeleted       = "PodDeleted"
)

// imageFailures are container waiting reasons meaning the body never started.
var imageFailures = map[string]bool{
	"ImagePullBackOff": true, "ErrImagePull": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "ImageInspectError": true, "RegistryUnavailable": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// Outcome is what the controller observed of one execution attempt.
type Outcome struct {
	// ExitCode of the tool container (meaningful when Started and no TerminationReason).
	ExitCode int
	// Signal that ended the process, if known (e.g. "SIGKILL").
	Signal string
	// TerminationReason is the Job/Pod/container reason, e.g. "DeadlineExceeded",
	// "OOMKilled", "Evicted", "ImagePullBackOff", "ErrImagePull", "JobDeleted",
	// "PodDeleted"; "" or an unknown reason ("Completed", "Error") defers to ExitCode.
	TerminationReason string
	// Stdout is the result bytes the runner framed (possibly a prefix, see StdoutTruncated).
	Stdout []byte
	// StdoutTruncated is true when the runner kept only a prefix of the output.
	StdoutTruncated bool
	// StdoutTotalBytes is the full output size when known (0: len(Stdout)).
	StdoutTotalBytes int64
	// StderrTail is the end of the tool's stderr, for error messages.
	StderrTail string
	// Attempt is the 1-based attempt number.
	Attempt int
	// Started is true once the tool container ran. When false, the outcome is
	// ImageNeverStarted whatever else is set (unless the Job or Pod was deleted).
	Started bool
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
// configuration. Termination reasons take precedence over the exit code (an OOM kill
// also exits 137). Output is parsed as JSON when it starts with '{' or '[' and is valid
// JSON; otherwise it is plain text. A JSON object with "isError": true is honoured as a
// tool error.
func Normalize(o Outcome, opts NormalizeOptions) Result {
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	meta := map[string]string{MetaAttempt: strconv.Itoa(max(o.Attempt, 1))}
	if r, msg, ok := terminated(o); ok {
		return failed(r, msg, meta)
	}
	if o.ExitCode != 0 {
		return exitFailure(o, opts, meta)
	}
	return output(o, opts, meta)
}

// terminated maps infrastructure failures; ok is false when the exit code decides.
func terminated(o Outcome) (Reason, string, bool) {
	switch r := o.TerminationReason; {
	case r == TerminationJobDeleted || r == TerminationPodDeleted:
		return ReasonJobDeleted, "the tool's execution was deleted before it finished", true
	case imageFailures[r] || !o.Started:
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

func exitFailure(o Outcome, opts NormalizeOptions, meta map[string]string) Result {
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

func output(o Outcome, opts NormalizeOptions, meta map[string]string) Result {
	total := max(o.StdoutTotalBytes, int64(len(o.Stdout)))
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
		if doc, err := parseDocument(body, "", FreezeOptions{MaxBytes: opts.MaxOutputBytes}, false); err == nil {
			return doc.value
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
