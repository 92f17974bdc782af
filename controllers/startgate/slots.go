package startgate

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Slots is the operator's own start bound (--max-concurrent-starts) without Kueue: Jobs
// behind it (podspec.StartGateOperator) are created suspended, and at most Max of them are
// "starting" at once — resumed, not ended, and their Pod's tool container not yet running.
// The rest wait in creation order (oldest first; ties by namespace and name). Counted from
// the cache of the operator's own Jobs and Pods, across namespaces (the bound protects the
// nodes, which namespaces share). Decisions in one operator are serialised, and a Job it
// resumed counts as starting until the cache shows it resumed (resumed, in memory only: a
// restart starts from a synced cache, which shows every resume that succeeded). What is
// left is the cache's own lag on Pods: a tool container that started a moment ago may free
// its slot a pass late, never early — but a Job resumed by another operator (a leader
// change mid-burst) may be missed once, so a burst can exceed Max by a little, briefly.
type Slots struct {
	// Reader is the operator's cache (toolgate's Jobs and Pods only).
	Reader client.Reader
	// Max is the bound; 0 or less: every Job may resume.
	Max int

	mu sync.Mutex
	// resumed are the Jobs this operator resumed that the cache may still show suspended,
	// with when they were resumed (forgotten once the cache shows them, or after resumedTTL).
	resumed map[types.UID]time.Time
}

// resumedTTL bounds how long a resume the cache does not show is counted (a Job deleted
// meanwhile never shows).
const resumedTTL = 30 * time.Second

// NewSlots is the start bound max over the cache reader.
func NewSlots(reader client.Reader, max int) *Slots {
	return &Slots{Reader: reader, Max: max, resumed: map[types.UID]time.Time{}}
}

// Verdict is what Slots decided for one waiting Job.
type Verdict struct {
	// Resume: the Job may start now (and was resumed, when Decide was given resume).
	Resume bool
	// Position is the Job's 1-based place among the waiting Jobs; Starting how many behind
	// the bound are starting.
	Position, Starting int
}

// Decide says whether job, suspended behind the operator's bound, may resume now and, when
// it may and resume is set, resumes it, holding every other decision back meanwhile.
func (s *Slots) Decide(ctx context.Context, job *batchv1.Job, resume func(context.Context, *batchv1.Job) error) (Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.decide(ctx, job)
	if err != nil || !v.Resume || resume == nil {
		return v, err
	}
	if err := resume(ctx, job); err != nil {
		return Verdict{}, err
	}
	if s.resumed == nil {
		s.resumed = map[types.UID]time.Time{}
	}
	s.resumed[job.UID] = time.Now()
	return v, nil
}

func (s *Slots) decide(ctx context.Context, job *batchv1.Job) (Verdict, error) {
	if s.Max <= 0 {
		return Verdict{Resume: true, Position: 1}, nil
	}
	jobs := &batchv1.JobList{}
	if err := s.Reader.List(ctx, jobs, client.MatchingLabels{podspec.LabelStartGate: podspec.StartGateOperator}); err != nil {
		return Verdict{}, err
	}
	pods := &corev1.PodList{}
	if err := s.Reader.List(ctx, pods, client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue}); err != nil {
		return Verdict{}, err
	}
	started := map[types.UID]bool{} // the Jobs whose Pod's tool container runs or ran
	hasPod := map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		owner := metav1.GetControllerOf(p)
		if owner == nil {
			continue
		}
		hasPod[owner.UID] = true
		if ToolStarted(p) {
			started[owner.UID] = true
		}
	}
	var waiting []*batchv1.Job
	v := Verdict{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		_, resumedHere := s.resumed[j.UID]
		if resumedHere && (!podspec.JobSuspended(j) || time.Since(s.resumed[j.UID]) > resumedTTL) {
			delete(s.resumed, j.UID) // the cache shows it now
			resumedHere = false
		}
		switch {
		case !j.DeletionTimestamp.IsZero() || jobFinished(j):
		case podspec.JobSuspended(j) && !resumedHere:
			if !hasPod[j.UID] { // a Pod still there: suspended again, not waiting to start
				waiting = append(waiting, j)
			}
		case !started[j.UID]:
			v.Starting++
		}
	}
	if _, ok := s.resumed[job.UID]; ok {
		return Verdict{Starting: v.Starting}, nil // resumed already: the cache is behind
	}
	if !slices.ContainsFunc(waiting, func(w *batchv1.Job) bool { return w.UID == job.UID }) {
		waiting = append(waiting, job) // the cache may not hold it yet
	}
	slices.SortFunc(waiting, func(a, b *batchv1.Job) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	v.Position = slices.IndexFunc(waiting, func(w *batchv1.Job) bool { return w.UID == job.UID }) + 1
	v.Resume = v.Position <= s.Max-v.Starting
	return v, nil
}

// ToolStarted reports whether the Pod's tool container runs, ran or has started: the Pod no
// longer holds a start slot.
func ToolStarted(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	cs := podspec.ToolContainerStatus(p)
	return cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil || (cs.Started != nil && *cs.Started))
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
