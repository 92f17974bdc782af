package podspec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBuildJobAdmission(t *testing.T) {
	for _, tc := range []struct {
		name        string
		admission   *Admission
		wantSuspend bool
		wantLabels  map[string]string // the admission labels, absent ones ""
		wantWait    string
		wantRead    *Admission
	}{
		{name: "none", wantLabels: map[string]string{LabelKueueQueue: "", LabelStartGate: ""}},
		{name: "kueue", admission: &Admission{Queue: "tools", MaxWait: 2 * time.Minute}, wantSuspend: true,
			wantLabels: map[string]string{LabelKueueQueue: "tools", LabelStartGate: StartGateKueue}, wantWait: "2m0s",
			wantRead: &Admission{Queue: "tools", MaxWait: 2 * time.Minute}},
		{name: "operator bound", admission: &Admission{MaxWait: 10 * time.Second}, wantSuspend: true,
			wantLabels: map[string]string{LabelKueueQueue: "", LabelStartGate: StartGateOperator}, wantWait: "10s",
			wantRead: &Admission{MaxWait: 10 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testJobInput(nil)
			in.Admission = tc.admission
			job := BuildJob(in, DefaultOptions())
			if got := JobSuspended(job); got != tc.wantSuspend {
				t.Errorf("suspended = %v, want %v", got, tc.wantSuspend)
			}
			got := map[string]string{LabelKueueQueue: job.Labels[LabelKueueQueue], LabelStartGate: job.Labels[LabelStartGate]}
			if d := cmp.Diff(tc.wantLabels, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
			if got := job.Annotations[AnnotationAdmissionMaxWait]; got != tc.wantWait {
				t.Errorf("max-wait annotation = %q, want %q", got, tc.wantWait)
			}
			// The Pod template never carries the queue: Kueue admits the Job, not its Pods.
			if _, ok := job.Spec.Template.Labels[LabelKueueQueue]; ok {
				t.Error("the Pod template carries the Kueue label")
			}
			a, ok := JobAdmission(job)
			if ok != (tc.wantRead != nil) {
				t.Fatalf("JobAdmission ok = %v", ok)
			}
			if ok {
				if d := cmp.Diff(*tc.wantRead, a); d != "" {
					t.Errorf("JobAdmission (-want +got):\n%s", d)
				}
			}
		})
	}
}
