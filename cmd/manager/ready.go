package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// syncWaiter is what cacheSynced needs of the manager's cache.
type syncWaiter interface {
	WaitForCacheSync(ctx context.Context) bool
}

// cacheSyncWait bounds one readiness check's wait for the informers.
const cacheSyncWait = 200 * time.Millisecond

// cacheSynced is a readiness check: Ready once the manager's informers have synced. Every
// replica runs its caches, leader or not (controller-runtime starts them before the
// election), so a standby is Ready — a rollout goes on — but only once it could take over
// without a cold start; the leader's check also covers the informers its controllers add.
func cacheSynced(c syncWaiter) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncWait)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the informers have not synced yet")
		}
		return nil
	}
}
