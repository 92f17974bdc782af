package jobexec

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The test hook holds only when the operator was started with it and the call is labelled;
// the operator stopping ends the hold with an error (no Job is created).
func TestHoldForTest(t *testing.T) {
	labelled := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{podcontract.LabelTestHold: "true"}}}
	plain := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	exec := func(hold time.Duration) *Executor {
		o := options.DefaultCall()
		o.TestHoldBeforeJobCreate = hold
		return &Executor{Env: execenv.Env{Options: o}}
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		hold    time.Duration
		call    *v1alpha1.ToolCall
		wantErr bool
	}{
		{name: "off: a labelled call is not held", hold: 0, call: labelled},
		{name: "on: an unlabelled call is not held", hold: time.Hour, call: plain},
		{name: "on: a labelled call is held until the operator stops", hold: time.Hour, call: labelled, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// stopped is already cancelled: a hold returns its error at once, no hold returns nil.
			err := exec(tc.hold).holdForTest(stopped, tc.call)
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
		})
	}
}
