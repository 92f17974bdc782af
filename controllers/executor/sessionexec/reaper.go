package sessionexec

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const (
	// reapEvery is how often the reaper looks at the session Pods.
	reapEvery = 2 * time.Second
	// sessionLifetime: an idle session Pod older than this is replaced (its certificate,
	// certLifetime, outlives it), however active its session.
	sessionLifetime = 24 * time.Hour
	// startBound: a session Pod that has not started running this long after its creation
	// (an image never pulled, no room on a node) is deleted; until then it is not idle.
	startBound = 10 * time.Minute
	// pruneAfter: a binding (poolclaim.go) of a Pod the reaper does not see is forgotten
	// once it is this old.
	pruneAfter = 30 * time.Second
)

// Reaper is the runnable (leader only) that deletes the session Pods that should go.
func (s *Executor) Reaper() manager.Runnable { return reaper{s} }

type reaper struct{ s *Executor }

// NeedLeaderElection: only the leader reaps (it alone runs calls).
func (reaper) NeedLeaderElection() bool { return true }

// Start reaps every reapEvery until ctx ends.
func (r reaper) Start(ctx context.Context) error {
	ctx = ctrl.LoggerInto(ctx, ctrl.Log.WithName("session-reaper"))
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.reap(ctx)
		}
	}
}

// reap deletes each session Pod that should go: one another process started (its CA is
// not this process's: nothing here can reach it), one that ended, and one idle past its
// timeout (since its last call ended here, else since it was created). A session's
// workspace reconciler deletes the session Pods that mount a claim it deletes.
func (r reaper) reap(ctx context.Context) {
	s := r.s
	pods := &corev1.PodList{}
	if err := s.List(ctx, pods, client.HasLabels{podcontract.LabelSessionPod}); err != nil {
		logger(ctx).Error(err, "listing session Pods")
		return
	}
	metrics.SessionPodsRunning.Set(float64(len(pods.Items)))
	now := s.Clock.Now()
	live := make(map[types.UID]bool, len(pods.Items))
	for i := range pods.Items {
		live[pods.Items[i].UID] = true
	}
	// A Pod just made may not be in the cache yet: only older bindings are forgotten.
	s.bindings.prune(live, now.Add(-pruneAfter))
	for i := range pods.Items {
		p := &pods.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if why := r.reapWhy(p, now); why != "" {
			s.deletePod(ctx, p, why)
			metrics.SessionPods.WithLabelValues(p.Namespace, "reaped").Inc()
		}
	}
}

func (r reaper) reapWhy(p *corev1.Pod, now time.Time) string {
	s := r.s
	if p.Annotations[podcontract.AnnotationSessionCA] != s.auth.fingerprint {
		return "started by another operator process"
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return "it ended"
	}
	if s.book.inUse(p.UID) {
		return ""
	}
	if now.Sub(p.CreationTimestamp.Time) >= sessionLifetime {
		return "older than " + sessionLifetime.String()
	}
	since, ok := s.book.idleSince(p.UID)
	if !ok {
		started := runningSince(p)
		if started.IsZero() {
			if now.Sub(p.CreationTimestamp.Time) >= startBound {
				return "not running " + startBound.String() + " after its creation"
			}
			return ""
		}
		since = started
	}
	idle, err := time.ParseDuration(p.Annotations[podcontract.AnnotationSessionIdleTimeout])
	if err != nil || idle <= 0 {
		idle = s.Options.Session.IdleTimeout
	}
	if now.Sub(since) >= idle {
		return "idle for " + idle.String()
	}
	return ""
}

// runningSince is when the Pod's signer container started running (zero: it has not).
func runningSince(p *corev1.Pod) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == podcontract.SignerContainerName && cs.State.Running != nil {
			return cs.State.Running.StartedAt.Time
		}
	}
	return time.Time{}
}
