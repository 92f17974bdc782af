package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/controllers/startgate"
)

// bindAdmission binds the flags of issue 34 (docs/bursts.md) to o: which Jobs wait,
// suspended, for Kueue or the operator's start bound, and for how long at most.
func bindAdmission(fs *flag.FlagSet, o *startgate.Options) {
	fs.StringVar(&o.Queue, "admission-queue", o.Queue, "Kueue LocalQueue (in each call's namespace) the Jobs of calls whose ToolScope chain declares no admission.queueName are submitted to: created suspended, labelled kueue.x-k8s.io/queue-name; empty: no Kueue")
	fs.DurationVar(&o.MaxWait, "admission-max-wait", o.MaxWait, "longest an attempt's Job waits for admission (Kueue or --max-concurrent-starts) when its ToolScope chain sets no admission.maxWait; then the call ends Failed, NotAdmitted. Between 1s and 24h")
	fs.IntVar(&o.MaxConcurrentStarts, "max-concurrent-starts", o.MaxConcurrentStarts, "without a Kueue queue: at most this many tool Jobs starting at once (resumed, their tool container not yet running); the rest wait suspended, oldest first; 0: unbounded")
}

// maxStartAllowance bounds --start-allowance: a Pod that has not started its tool in ten
// minutes will not.
const maxStartAllowance = 10 * time.Minute

// bindStartAllowance binds --start-allowance (issue 34, item 4) to d.
func bindStartAllowance(fs *flag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "start-allowance", *d, "added to a cold tool Pod's and Job's activeDeadlineSeconds for sandbox start-up (scheduling, image, containers); the tool's own timeout counts from the body's start, enforced by the runner. Between 0 and 10m; 0: start-up counts inside the timeout")
}

// validateStartAllowance checks --start-allowance.
func validateStartAllowance(d time.Duration) error {
	if d < 0 || d > maxStartAllowance {
		return fmt.Errorf("--start-allowance %v must be between 0 and %v", d, maxStartAllowance)
	}
	return nil
}
