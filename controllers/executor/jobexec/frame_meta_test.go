package jobexec

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
)

// What the runner vouches for in its frame reaches the result's meta: a body that left a
// process holding its output open (the runner stopped reading, later output is missing)
// says so, on success and on failure alike.
func TestFrameOutputLeftOpenReachesMeta(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    frame.Frame
		want map[string]string
	}{
		{"left open", frame.Frame{V: frame.Version, Stdout: "hi\n", StdoutBytes: 3, OutputLeftOpen: true},
			map[string]string{pipeline.MetaAttempt: "1", pipeline.MetaOutputBytes: "3", pipeline.MetaOutputLeftOpen: "true"}},
		{"left open, failed", frame.Frame{V: frame.Version, ExitCode: 3, OutputLeftOpen: true},
			map[string]string{pipeline.MetaAttempt: "1", pipeline.MetaExitCode: "3", pipeline.MetaOutputLeftOpen: "true"}},
		{"closed", frame.Frame{V: frame.Version, Stdout: "hi\n", StdoutBytes: 3},
			map[string]string{pipeline.MetaAttempt: "1", pipeline.MetaOutputBytes: "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(context.Context, string) (frame.Frame, error) { return tc.f, nil }
			code := int32(tc.f.ExitCode)
			o := terminatedOutcome(context.Background(), &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: code},
				&corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: code, Message: "signed"}, pipeline.Outcome{Attempt: 1}, read)
			res := pipeline.Normalize(o, pipeline.NormalizeOptions{})
			if diff := cmp.Diff(tc.want, res.Meta); diff != "" {
				t.Errorf("meta (-want +got):\n%s", diff)
			}
		})
	}
}
