package main

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	ctrl "sigs.k8s.io/controller-runtime"
)

// leaderFlags are the leader-election settings: with several replicas one holds the Lease
// and reconciles, the others keep warm caches and wait to take over.
type leaderFlags struct {
	enabled       bool
	id, namespace string
	// lease: how long a Lease not renewed stays its holder's (what a killed leader costs);
	// renew: how long the leader keeps trying to renew before it gives up and exits;
	// retry: how often candidates try to acquire, and the leader to renew.
	lease, renew, retry time.Duration
}

// The defaults are controller-runtime's (and kube-controller-manager's): a leader that
// dies without releasing the Lease is replaced within lease + retry (≈ 15–17 s); a
// graceful stop releases it (LeaderElectionReleaseOnCancel) and a standby takes over
// within one retry period. Shorter values cut the first figure but make a leader give up
// sooner when the API server is slow or restarting (the real-cluster chaos run saw a
// restart of ≈ 40 s cost the lease even at 10 s): then the process exits and restarts.
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
	defaultRetryPeriod   = 2 * time.Second
)

func bindLeader(fs *flag.FlagSet) *leaderFlags {
	f := &leaderFlags{}
	fs.BoolVar(&f.enabled, "leader-elect", false, "elect a leader (a coordination.k8s.io Lease) so that only one replica reconciles")
	fs.StringVar(&f.id, "leader-election-id", "toolgate.dev", "name of the leader-election Lease")
	fs.StringVar(&f.namespace, "leader-election-namespace", "",
		"namespace of the leader-election Lease (default: the Pod's own, from its service-account mount)")
	fs.DurationVar(&f.lease, "leader-election-lease-duration", defaultLeaseDuration,
		"how long candidates wait after the last renewal before they take the Lease of a leader that stopped renewing it")
	fs.DurationVar(&f.renew, "leader-election-renew-deadline", defaultRenewDeadline,
		"how long the leader retries renewing before it gives up leadership (and exits)")
	fs.DurationVar(&f.retry, "leader-election-retry-period", defaultRetryPeriod,
		"how often candidates try to acquire the Lease and the leader renews it")
	return f
}

// validate applies client-go's rules (leaderelection.NewLeaderElector refuses anything
// else at start, after the caches synced): lease > renew > retry × JitterFactor.
func (f *leaderFlags) validate() error {
	if !f.enabled {
		return nil
	}
	switch {
	case f.id == "":
		return fmt.Errorf("--leader-election-id must not be empty")
	case f.retry <= 0:
		return fmt.Errorf("--leader-election-retry-period %s must be positive", f.retry)
	case f.lease <= f.renew:
		return fmt.Errorf("--leader-election-lease-duration %s must be longer than --leader-election-renew-deadline %s", f.lease, f.renew)
	case f.renew <= time.Duration(leaderelection.JitterFactor*float64(f.retry)):
		return fmt.Errorf("--leader-election-renew-deadline %s must be longer than %.1f × --leader-election-retry-period %s",
			f.renew, leaderelection.JitterFactor, f.retry)
	}
	return nil
}

// apply sets the manager's leader-election options. The Lease is released when the
// manager stops (LeaderElectionReleaseOnCancel): safe because main exits as soon as
// mgr.Start returns, so nothing reconciles after the release.
func (f *leaderFlags) apply(o *ctrl.Options) {
	o.LeaderElection = f.enabled
	o.LeaderElectionID = f.id
	o.LeaderElectionNamespace = f.namespace
	o.LeaderElectionReleaseOnCancel = true
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = ptrDuration(f.lease), ptrDuration(f.renew), ptrDuration(f.retry)
}
