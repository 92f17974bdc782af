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
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	ok := func(r Report) Outcome { return Outcome{Started: true, Attempt: 1, Report: &r} }
	meta := func(kv ...string) map[string]string {
		m := map[string]string{MetaAttempt: "1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		in   Outcome
		opts NormalizeOptions
		want Result
	}{
		{"plain text", ok(Report{Stdout: []byte("hello\n")}), NormalizeOptions{},
			Result{OK: true, Content: "hello\n", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "6")}},
		{"JSON object", ok(Report{Stdout: []byte(` {"n": 1e400, "s": "x"}`)}), NormalizeOptions{},
			Result{OK: true, Content: map[string]any{"n": json.Number("1e400"), "s": "x"}, Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "23")}},
		{"JSON array", ok(Report{Stdout: []byte(`[1,"a"]`)}), NormalizeOptions{},
			Result{OK: true, Content: []any{json.Number("1"), "a"}, Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "7")}},
		{"bare scalar stays text", ok(Report{Stdout: []byte("42")}), NormalizeOptions{},
			Result{OK: true, Content: "42", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "2")}},
		{"bracketed text stays text", ok(Report{Stdout: []byte("[INFO] done")}), NormalizeOptions{},
			Result{OK: true, Content: "[INFO] done", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "11")}},
		{"empty output", ok(Report{}), NormalizeOptions{},
			Result{OK: true, Content: "", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "0")}},
		{"body isError honoured", ok(Report{Stdout: []byte(`{"isError":true,"error":"file not found"}`)}), NormalizeOptions{},
			Result{IsError: true, Content: map[string]any{"isError": true, "error": "file not found"}, Error: "file not found",
				Reason: ReasonToolError, Meta: meta(MetaOutputBytes, "41")}},
		{"body isError false is fine", ok(Report{Stdout: []byte(`{"isError":false}`)}), NormalizeOptions{},
			Result{OK: true, Content: map[string]any{"isError": false}, Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "17")}},
		{"not UTF-8", ok(Report{Stdout: []byte("ab\xffcd")}), NormalizeOptions{},
			Result{IsError: true, Content: "the tool's output is not valid UTF-8 text", Error: "the tool's output is not valid UTF-8 text",
				Reason: ReasonOutputNotUTF8, Meta: meta(MetaOutputBytes, "5")}},
		{"over limit", ok(Report{Stdout: []byte("0123456789")}), NormalizeOptions{MaxOutputBytes: 8},
			Result{IsError: true, Content: "the tool's output (10 bytes) is over the output limit", Error: "the tool's output (10 bytes) is over the output limit",
				Reason: ReasonOutputTooLarge, Meta: meta(MetaOutputBytes, "10")}},
		{"truncated is an error by default", ok(Report{Stdout: []byte("0123"), StdoutTruncated: true, StdoutTotalBytes: 9000}), NormalizeOptions{},
			Result{IsError: true, Content: "the tool's output (9000 bytes) is over the output limit", Error: "the tool's output (9000 bytes) is over the output limit",
				Reason: ReasonOutputTooLarge, Meta: meta(MetaOutputBytes, "9000", MetaTruncated, "true")}},
		{"truncated text accepted honestly", ok(Report{Stdout: []byte("héllo wörl\xc3"), StdoutTruncated: true, StdoutTotalBytes: 9000}), NormalizeOptions{AcceptTruncated: true},
			Result{OK: true, Content: "héllo wörl", Reason: ReasonOutputTruncated, Meta: meta(MetaOutputBytes, "9000", MetaTruncated, "true")}},
		{"non-zero exit with stderr", ok(Report{ExitCode: 2, StderrTail: "grep: bad regex\n"}), NormalizeOptions{},
			Result{IsError: true, Content: "the tool exited with code 2: grep: bad regex", Error: "the tool exited with code 2: grep: bad regex",
				Reason: ReasonNonZeroExit, Meta: meta(MetaExitCode, "2")}},
		{"non-zero exit keeps stdout", ok(Report{ExitCode: 1, Stdout: []byte(`{"error":"x"}`)}), NormalizeOptions{},
			Result{IsError: true, Content: map[string]any{"error": "x"}, Error: "the tool exited with code 1",
				Reason: ReasonNonZeroExit, Meta: meta(MetaExitCode, "1", MetaOutputBytes, "13")}},
		{"signal", ok(Report{ExitCode: 143, Signal: "SIGTERM"}), NormalizeOptions{},
			Result{IsError: true, Content: "the tool was terminated by signal SIGTERM", Error: "the tool was terminated by signal SIGTERM",
				Reason: ReasonNonZeroExit, Meta: meta(MetaExitCode, "143")}},
		{"output left open", ok(Report{Stdout: []byte("hi\n"), OutputLeftOpen: true}), NormalizeOptions{},
			Result{OK: true, Content: "hi\n", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "3", MetaOutputLeftOpen, "true")}},
		{"redactions counted", ok(Report{Stdout: []byte("[REDACTED]\n"), Redactions: 3}), NormalizeOptions{},
			Result{OK: true, Content: "[REDACTED]\n", Reason: ReasonSucceeded, Meta: meta(MetaOutputBytes, "11", MetaRedactions, "3")}},
		{"credential too short: the body did not run", ok(Report{ExitCode: 125, RunnerReason: RunnerCredentialTooShort,
			StderrTail: "CredentialTooShort: credential TOKEN is 3 bytes"}), NormalizeOptions{},
			Result{IsError: true, Reason: ReasonCredentialTooShort,
				Content: "the tool could not be started: a credential it is given is too short to redact from its output",
				Error:   "the tool could not be started: a credential it is given is too short to redact from its output", Meta: meta()}},
		{"output left open, non-zero exit", ok(Report{ExitCode: 1, OutputLeftOpen: true}), NormalizeOptions{},
			Result{IsError: true, Content: "the tool exited with code 1", Error: "the tool exited with code 1",
				Reason: ReasonNonZeroExit, Meta: meta(MetaExitCode, "1", MetaOutputLeftOpen, "true")}},
		// A signal with exit code 0 (no honest runner writes it) is still not a success.
		{"signal with exit 0", ok(Report{Signal: "SIGKILL", Stdout: []byte("x")}), NormalizeOptions{},
			Result{IsError: true, Content: "x", Error: "the tool was terminated by signal SIGKILL",
				Reason: ReasonNonZeroExit, Meta: meta(MetaExitCode, "0", MetaOutputBytes, "1")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Normalize(tc.in, tc.opts)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeTerminations(t *testing.T) {
	tests := []struct {
		term    string
		started bool
		reason  Reason
		msg     string
	}{
		{"DeadlineExceeded", true, ReasonDeadlineExceeded, "the tool exceeded its time limit and was stopped"},
		{"OOMKilled", true, ReasonOOMKilled, "the tool ran out of memory and was stopped"},
		{"Evicted", true, ReasonEvicted, "the tool was evicted before it finished"},
		{"JobDeleted", true, ReasonJobDeleted, "the tool's execution was deleted before it finished"},
		{"PodDeleted", false, ReasonJobDeleted, "the tool's execution was deleted before it finished"},
		{"ImagePullBackOff", false, ReasonImageNeverStarted, "the tool could not be started"},
		{"ErrImagePull", false, ReasonImageNeverStarted, "the tool could not be started"},
		{"CreateContainerConfigError", false, ReasonImageNeverStarted, "the tool could not be started"},
		// The container terminated, but the runtime never started its entrypoint (exec format error).
		{"StartError", true, ReasonImageNeverStarted, "the tool could not be started"},
		{"DeadlineExceeded", false, ReasonImageNeverStarted, "the tool could not be started"},
		{"", false, ReasonImageNeverStarted, "the tool could not be started"},
		{"CredentialMissing", false, ReasonCredentialMissing,
			"the tool could not be started: a Secret or key its credentials name is missing in this namespace"},
		{"CredentialTooShort", false, ReasonCredentialTooShort,
			"the tool could not be started: a credential it is given is too short to redact from its output"},
	}
	for _, tc := range tests {
		t.Run(tc.term, func(t *testing.T) {
			// An OOM kill also exits 137, and the output may be partial: the reason wins.
			o := Outcome{TerminationReason: tc.term, Started: tc.started, Report: &Report{ExitCode: 137, Stdout: []byte("partial")}, Attempt: 2}
			want := Result{IsError: true, Content: tc.msg, Error: tc.msg, Reason: tc.reason, Meta: map[string]string{MetaAttempt: "2"}}
			if diff := cmp.Diff(want, Normalize(o, NormalizeOptions{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNormalizeNoHostConfig: whatever the failure, the result carries no host
// configuration. Outcome has no field for timeouts, images or resources, so the only
// numbers a result may hold are the exit code, the attempt and the output size, and the
// messages never mention seconds, images, memory sizes or policies.
func TestNormalizeNoHostConfig(t *testing.T) {
	forbidden := regexp.MustCompile(`(?i)activeDeadline|seconds|\d+\s*(s|m|h|ms|Mi|Gi|Ki)\b|image:|registry|limit of|cpu|memory limit|policy|runtimeClass`)
	terms := []string{"DeadlineExceeded", "OOMKilled", "Evicted", "ImagePullBackOff", "ErrImagePull", "InvalidImageName",
		"JobDeleted", "PodDeleted", "Completed", "Error", "CredentialMissing", "CredentialTooShort", ""}
	for _, term := range terms {
		for _, started := range []bool{true, false} {
			for _, exit := range []int{0, 1, 137} {
				o := Outcome{TerminationReason: term, Started: started, Report: &Report{ExitCode: exit, Stdout: []byte("out")}, Attempt: 3}
				if exit == 1 {
					o.Report, o.ContainerExitCode = nil, new(int32(exit))
				}
				r := Normalize(o, NormalizeOptions{MaxOutputBytes: 2})
				fr, err := FreezeResult(r)
				if err != nil {
					t.Fatal(err)
				}
				if m := forbidden.FindString(fr.String()); m != "" {
					t.Errorf("%s/%v/%d: result mentions %q: %s", term, started, exit, m, fr)
				}
				for k := range r.Meta {
					if k != MetaAttempt && k != MetaExitCode && k != MetaOutputBytes && k != MetaTruncated &&
						k != MetaKubernetesReason && k != MetaContainerExitCode {
						t.Errorf("unexpected meta key %q", k)
					}
				}
			}
		}
	}
}

func TestNormalizeStderrSanitized(t *testing.T) {
	tail := strings.Repeat("x", maxStderrTail) + "\xffEND"
	r := Normalize(Outcome{Started: true, Report: &Report{ExitCode: 1, StderrTail: tail}}, NormalizeOptions{})
	if !strings.HasSuffix(r.Error, "\uFFFDEND") || len(r.Error) > maxStderrTail+64 {
		t.Errorf("stderr not bounded and sanitized: %d bytes, ends %q", len(r.Error), r.Error[len(r.Error)-8:])
	}
}

// TestNormalizeLostEndings: an ending without a verified report is ExecutionLost, or
// ResultUnreadable when a frame was there but could not be trusted; the Kubernetes reason
// and the kubelet's exit code are reported in meta, never as the tool's.
func TestNormalizeLostEndings(t *testing.T) {
	meta := func(kv ...string) map[string]string {
		m := map[string]string{MetaAttempt: "1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const lostMsg, unreadableMsg = "the tool's execution ended without a result", "the tool's result could not be read"
	tests := []struct {
		name string
		in   Outcome
		want Result
	}{
		{"Job failed, no Pod", Outcome{TerminationReason: "BackoffLimitExceeded", Started: true},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost, Meta: meta(MetaKubernetesReason, "BackoffLimitExceeded")}},
		{"node shutdown", Outcome{TerminationReason: "NodeShutdown", Started: true},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost, Meta: meta(MetaKubernetesReason, "NodeShutdown")}},
		{"unknown reason before start", Outcome{TerminationReason: "OutOfcpu"},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost, Meta: meta(MetaKubernetesReason, "OutOfcpu")}},
		{"exit 0 without frame", Outcome{TerminationReason: "Completed", Started: true, ContainerExitCode: new(int32(0))},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost,
				Meta: meta(MetaKubernetesReason, "Completed", MetaContainerExitCode, "0")}},
		{"no reason at all", Outcome{Started: true},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost, Meta: meta()}},
		{"forged frame", Outcome{TerminationReason: "Completed", Started: true, ContainerExitCode: new(int32(0)), Unreadable: "frame: not signed by the runner"},
			Result{IsError: true, Content: unreadableMsg, Error: unreadableMsg, Reason: ReasonResultUnreadable,
				Meta: meta(MetaKubernetesReason, "Completed", MetaContainerExitCode, "0")}},
		{"reason sanitized", Outcome{TerminationReason: "Node\nLost: " + strings.Repeat("x", 100), Started: true},
			Result{IsError: true, Content: lostMsg, Error: lostMsg, Reason: ReasonExecutionLost, Meta: meta(MetaKubernetesReason, "NodeLost"+strings.Repeat("x", 56))}},
		{"known reason still wins", Outcome{TerminationReason: "OOMKilled", Started: true, Unreadable: "frame: malformed"},
			Result{IsError: true, Content: "the tool ran out of memory and was stopped", Error: "the tool ran out of memory and was stopped", Reason: ReasonOOMKilled, Meta: meta()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Attempt = 1
			if diff := cmp.Diff(tc.want, Normalize(tc.in, NormalizeOptions{})); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNormalizeNeverSucceedsUnvouched: whatever else an outcome holds, without a Report
// it is an error that carries no exit code and no output.
func TestNormalizeNeverSucceedsUnvouched(t *testing.T) {
	terms := []string{"", "Completed", "Error", "BackoffLimitExceeded", "PodFailurePolicy", "NodeLost",
		"Terminated", "NodeShutdown", "DisruptionTarget", "UnexpectedAdmissionError", "Succeeded"}
	for _, term := range terms {
		for _, started := range []bool{true, false} {
			for _, unreadable := range []string{"", "bad frame"} {
				o := Outcome{TerminationReason: term, Started: started, Unreadable: unreadable, ContainerExitCode: new(int32(0)), Attempt: 1}
				r := Normalize(o, NormalizeOptions{})
				if r.OK || !r.IsError {
					t.Errorf("%q/%v/%q: succeeded: %+v", term, started, unreadable, r)
				}
				if _, ok := r.Meta[MetaExitCode]; ok || r.Meta[MetaOutputBytes] != "" {
					t.Errorf("%q/%v/%q: meta claims a tool exit or output: %v", term, started, unreadable, r.Meta)
				}
			}
		}
	}
}

// TestNormalizeTotalBytesOnlyWhenCut: the runner's total counts only for output it cut;
// an untruncated report is len(Stdout) bytes whatever total it claims.
func TestNormalizeTotalBytesOnlyWhenCut(t *testing.T) {
	r := Normalize(Outcome{Started: true, Report: &Report{Stdout: []byte("abc"), StdoutTotalBytes: 1 << 40}}, NormalizeOptions{})
	if !r.OK || r.Meta[MetaOutputBytes] != "3" {
		t.Fatalf("result %+v", r)
	}
}
