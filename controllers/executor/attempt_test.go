package executor

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func TestAdmittedDeadline(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	call := &v1alpha1.ToolCall{Status: v1alpha1.ToolCallStatus{
		Tool:     &v1alpha1.ToolSnapshot{Spec: &v1alpha1.ToolSpec{Timeout: &metav1.Duration{Duration: 5 * time.Second}}},
		Attempts: []v1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: start}}},
	}}
	const grace, maxWait = 30 * time.Second, 10 * time.Minute
	now := start.Add(time.Hour) // never read: the attempt has a start
	for _, tc := range []struct {
		name     string
		admitted time.Time
		want     time.Time
	}{
		{name: "admitted late: the timeout counts from admission", admitted: start.Add(7 * time.Minute), want: start.Add(7*time.Minute + 5*time.Second + grace)},
		{name: "admission not known yet: the latest it could come", want: start.Add(maxWait + 5*time.Second + grace)},
		{name: "a Job clock behind the operator's: never before the attempt's start", admitted: start.Add(-time.Second), want: start.Add(5*time.Second + grace)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AdmittedDeadline(call, tc.admitted, maxWait, now, grace); !got.Equal(tc.want) {
				t.Errorf("AdmittedDeadline = %s, want %s", got, tc.want)
			}
		})
	}
	if got, want := AttemptDeadline(call, now, grace), start.Add(5*time.Second+grace); !got.Equal(want) {
		t.Errorf("AttemptDeadline = %s, want %s (from the attempt's start)", got, want)
	}
}
