package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// maxTestHold bounds --test-hold-before-job-create: long enough for the e2e suite to stop
// the leader in the window, short of any call's deadline budget.
const maxTestHold = 2 * time.Minute

// bindTestHooks binds the test-only flags (docs/operations.md, "Test hooks"): off by default,
// set only by the e2e suite for its own run.
func bindTestHooks(fs *flag.FlagSet, o *options.Call) {
	fs.DurationVar(&o.TestHoldBeforeJobCreate, "test-hold-before-job-create", 0, "TEST ONLY, never in a real install: hold the Job create of calls labelled "+podcontract.LabelTestHold+"=true this long after their attempt was recorded (the e2e handover spec stops the leader in that window); 0: off, the label means nothing. At most 2m")
}

// validateTestHooks refuses a hold that is negative or longer than maxTestHold.
func validateTestHooks(o options.Call) error {
	if d := o.TestHoldBeforeJobCreate; d < 0 || d > maxTestHold {
		return fmt.Errorf("--test-hold-before-job-create %s must be between 0 (off) and %s", d, maxTestHold)
	}
	return nil
}
