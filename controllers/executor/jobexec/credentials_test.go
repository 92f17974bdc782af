package jobexec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// The pipeline core does not import pkg/frame: ReportOf passes the runner's reason through
// as Report.RunnerReason, and Normalize recognises CredentialTooShort by its own copy of
// the name, which must be the runner's.
func TestRunnerReasonsAgreeWithThePipeline(t *testing.T) {
	if pipeline.RunnerCredentialTooShort != frame.ReasonCredentialTooShort {
		t.Errorf("pipeline.RunnerCredentialTooShort %q, frame.ReasonCredentialTooShort %q",
			pipeline.RunnerCredentialTooShort, frame.ReasonCredentialTooShort)
	}
	r := ReportOf(frame.Frame{ExitCode: frame.ExitRunnerError, Reason: frame.ReasonCredentialTooShort, Redactions: 2})
	if r.RunnerReason != pipeline.RunnerCredentialTooShort || r.Redactions != 2 {
		t.Errorf("report %+v: the runner's reason and count are not carried", r)
	}
}

// The kubelet's words name the missing Secret or key: they reach the Executed condition
// (bounded: controllers' TestCredentialMissingExecutedMessage), never the result.
func TestCredentialMissingDetail(t *testing.T) {
	msg := `secret "github" not found`
	pod := executortest.PodWith(corev1.PodPending, "", executortest.ConfigError(msg))
	o, ok := podOutcome(context.Background(), pod, time.Now(), pipeline.Outcome{Attempt: 1}, nil, executortest.Features)
	if !ok || o.TerminationReason != pipeline.TerminationCredentialMissing || o.Detail != "kubelet: "+msg {
		t.Fatalf("outcome %+v (ended %v), want CredentialMissing with detail %q", o, ok, msg)
	}
	res := pipeline.Normalize(o, pipeline.NormalizeOptions{})
	if strings.Contains(res.Error, "github") || strings.Contains(fmt.Sprint(res.Content), "github") {
		t.Errorf("result names the Secret: %q", res.Content)
	}
	long := executortest.ConfigError(`secret "` + strings.Repeat("x", 2*bounds.MaxDetail) + `" not found`)
	o, _ = podOutcome(context.Background(), executortest.PodWith(corev1.PodPending, "", long), time.Now(), pipeline.Outcome{Attempt: 1}, nil, executortest.Features)
	if len(o.Detail) > bounds.MaxDetail {
		t.Errorf("detail of %d bytes, want at most %d", len(o.Detail), bounds.MaxDetail)
	}
}
