package toolgatetest

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

func TestScriptAttemptsPlaysEachAttemptThenTheLast(t *testing.T) {
	k := NewKubelet(nil)
	k.Script("flaky", Outcome{ExitCode: 9})
	k.ScriptAttempts("flaky", Outcome{ExitCode: 1}, Outcome{ExitCode: 2})
	k.Script("plain", Outcome{ExitCode: 3})
	job := func(tool, attempt string) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{podcontract.LabelAttempt: attempt},
			Annotations: map[string]string{podcontract.AnnotationTool: tool}}}
	}
	for _, tc := range []struct {
		tool, attempt string
		want          int32
	}{{"flaky", "1", 1}, {"flaky", "2", 2}, {"flaky", "3", 2}, {"flaky", "", 1}, {"plain", "2", 3}} {
		if got := k.scriptFor(job(tc.tool, tc.attempt)).ExitCode; got != tc.want {
			t.Errorf("%s attempt %q: exit %d, want %d", tc.tool, tc.attempt, got, tc.want)
		}
	}
	if o := k.scriptFor(job("unscripted", "1")); !o.Echo {
		t.Errorf("an unscripted tool echoes: %+v", o)
	}
}
