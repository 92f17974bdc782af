package main

import (
	"context"
	"flag"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// The leader-election flags default to controller-runtime's timings, are checked by
// client-go's rules before the manager starts, and always release the Lease on a stop.
func TestLeaderFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{args: nil},
		{args: []string{"--leader-elect"}},
		{args: []string{"--leader-elect", "--leader-election-lease-duration=8s", "--leader-election-renew-deadline=5s",
			"--leader-election-retry-period=1s"}},
		{args: []string{"--leader-elect", "--leader-election-lease-duration=10s"}, err: "must be longer than --leader-election-renew-deadline"},
		{args: []string{"--leader-elect", "--leader-election-retry-period=9s"}, err: "1.2 × --leader-election-retry-period"},
		{args: []string{"--leader-elect", "--leader-election-retry-period=0s"}, err: "must be positive"},
		{args: []string{"--leader-elect", "--leader-election-id="}, err: "must not be empty"},
		// Without --leader-elect the timings are not used, so they are not refused.
		{args: []string{"--leader-election-lease-duration=1s"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := bindLeader(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := f.validate()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLeaderFlagsApply(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f := bindLeader(fs)
	if err := fs.Parse([]string{"--leader-elect", "--leader-election-namespace=ops"}); err != nil {
		t.Fatal(err)
	}
	var o ctrl.Options
	f.apply(&o)
	if !o.LeaderElection || o.LeaderElectionID != "toolgate.dev" || o.LeaderElectionNamespace != "ops" || !o.LeaderElectionReleaseOnCancel {
		t.Fatalf("options %+v", o)
	}
	if *o.LeaseDuration != 15*time.Second || *o.RenewDeadline != 10*time.Second || *o.RetryPeriod != 2*time.Second {
		t.Fatalf("timings %v %v %v, want controller-runtime's 15s 10s 2s", *o.LeaseDuration, *o.RenewDeadline, *o.RetryPeriod)
	}
}

type fakeSync struct{ synced bool }

// WaitForCacheSync returns at once when synced, else when ctx ends (as the informers do).
func (f fakeSync) WaitForCacheSync(ctx context.Context) bool {
	if f.synced {
		return true
	}
	<-ctx.Done()
	return false
}

func TestReadyOnlyOnceCachesSynced(t *testing.T) {
	req := httptest.NewRequest("GET", "/readyz", nil)
	if err := cacheSynced(fakeSync{})(req); err == nil {
		t.Fatal("ready before the informers synced")
	}
	if err := cacheSynced(fakeSync{synced: true})(req); err != nil {
		t.Fatalf("not ready with synced informers: %v", err)
	}
}
