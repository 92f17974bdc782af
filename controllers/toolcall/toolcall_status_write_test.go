package toolcall

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// A result JSON cannot hold would leave resultDigest empty, and the API server refuses a
// result without its digest: the call would never end. setTerminal ends it isError instead.
func TestSetTerminalEndsAnUnrepresentableResultAsAnError(t *testing.T) {
	cases := []struct {
		name      string
		res       pipeline.Result
		phase     v1alpha1.ToolCallPhase
		wantPhase v1alpha1.ToolCallPhase
		wantError bool
	}{
		{name: "plain result", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: "hi"},
			phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseSucceeded},
		{name: "NaN content", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: map[string]any{"x": math.NaN()}},
			phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseFailed, wantError: true},
		{name: "unsupported type", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: make(chan int)},
			phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseFailed, wantError: true},
		{name: "a number no float64 holds", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: map[string]any{"n": json.Number("1e400")}},
			phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseFailed, wantError: true},
		{name: "denied stays denied", res: pipeline.Result{IsError: true, Reason: pipeline.ReasonPolicyDenied, Content: math.Inf(1)},
			phase: v1alpha1.PhaseDenied, wantPhase: v1alpha1.PhaseDenied, wantError: true},
		{name: "meta over its key limit", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: "hi", Meta: hugeMeta()},
			phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseFailed, wantError: true},
		{name: "meta that JSON cannot carry", res: pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: "hi",
			Meta: map[string]string{"bad": "\xff"}}, phase: v1alpha1.PhaseSucceeded, wantPhase: v1alpha1.PhaseFailed, wantError: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := (&Reconciler{Clock: clocktesting.NewFakeClock(time.Now())}).wire()
			call := unitCall("c", "echo")
			r.status.setTerminal(call, tc.phase, tc.res, r.Clock.Now())
			if call.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", call.Status.Phase, tc.wantPhase)
			}
			if call.Status.Result == nil || call.Status.ResultDigest == "" {
				t.Fatalf("result %+v digest %q: a terminal call needs both", call.Status.Result, call.Status.ResultDigest)
			}
			if call.Status.Result.IsError != tc.wantError {
				t.Errorf("isError %v, want %v", call.Status.Result.IsError, tc.wantError)
			}
			if tc.wantError && tc.res.Reason == pipeline.ReasonSucceeded && call.Status.Result.Reason != v1alpha1.ReasonOperatorError {
				t.Errorf("reason %q, want %q", call.Status.Result.Reason, v1alpha1.ReasonOperatorError)
			}
			if n := len(call.Status.Result.Meta); n > pipeline.MaxResultMetaKeys {
				t.Errorf("a meta of %d keys is written; the API server refuses it", n)
			}
		})
	}
}

// The API server re-encodes the numbers of a custom resource (1.0 as 1, 1E+2 as 100, an
// integer beyond int64 as a float64): the digest is made of the content as it is stored,
// so that the stored result matches its digest.
func TestResultDigestIsOfTheStoredContent(t *testing.T) {
	content := map[string]any{"one": json.Number("1.0"), "exp": json.Number("1E+2"), "big": json.Number("123456789012345678901234567890")}
	r := (&Reconciler{Clock: clocktesting.NewFakeClock(time.Now())}).wire()
	call := unitCall("c", "echo")
	r.status.setTerminal(call, v1alpha1.PhaseSucceeded, pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: content}, r.Clock.Now())
	const stored = `{"big":1.2345678901234568e29,"exp":100,"one":1}`
	if got := string(call.Status.Result.Content.Raw); got != stored {
		t.Errorf("content %s, want %s", got, stored)
	}
	want, err := pipeline.FreezeResult(pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: map[string]any{
		"one": json.Number("1"), "exp": json.Number("100"), "big": json.Number("1.2345678901234568e+29")}})
	if err != nil {
		t.Fatal(err)
	}
	if call.Status.ResultDigest != want.Digest() {
		t.Errorf("digest %s is not of the stored content (%s)", call.Status.ResultDigest, want.Digest())
	}
}

func hugeMeta() map[string]string {
	meta := map[string]string{}
	for i := range pipeline.MaxResultMetaKeys + 1 {
		meta["k"+strconv.Itoa(i)] = "v"
	}
	return meta
}
