package jobexec

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// holdForTest is the test-only hook --test-hold-before-job-create (docs/operations.md): off
// unless the operator was started with it, it waits that long before creating the Job of a
// call labelled podcontract.LabelTestHold, between the attempt's status write and its Job
// create, so that the e2e suite can stop the leader in that window and see the new leader
// create the Job (Observe: a Job truly absent was never created). It only delays a create
// the attempt's deadline still bounds; the operator stopping (ctx) ends it without the create.
func (j *Executor) holdForTest(ctx context.Context, call *v1alpha1.ToolCall) error {
	d := j.Options.TestHoldBeforeJobCreate
	if d <= 0 || call.Labels[podcontract.LabelTestHold] != "true" {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("test hook: holding the Job create", "hold", d)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		ctrl.LoggerFrom(ctx).Info("test hook: the operator stopped during the hold; no Job created")
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
