package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// ident is a client acting as one user, on a connection of its own, with no client-side
// rate limit, recording how the API server classified its requests and how many it
// answered 429 (client-go retries those itself, after the Retry-After APF sends).
type ident struct {
	name     string
	c        client.Client
	rec      *toolgatetest.PFRecorder
	tooMany  atomic.Int64
	requests atomic.Int64
}

func newIdent(env *toolgatetest.Env, name string, groups []string) (*ident, error) {
	cfg, err := env.UserConfig(name, append(groups, toolgatetest.EditorsGroup))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limiter: the API server decides
	id := &ident{name: name, rec: &toolgatetest.PFRecorder{}}
	cfg = id.rec.Wrap(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			id.requests.Add(1)
			if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
				id.tooMany.Add(1)
			}
			return resp, err
		})
	})
	id.c, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	return id, err
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// serviceAccountIdentity is the user name and groups the API server gives a ServiceAccount.
func serviceAccountIdentity(namespace, name string) (string, []string) {
	return fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace}
}

// operatorSamples are the latencies of the operator identity's requests in one phase.
type operatorSamples struct {
	mu           sync.Mutex
	get, update  []time.Duration
	errors       int
	firstErr     string
	cycles, late int
}

func (s *operatorSamples) add(get, update time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cycles++
	if err != nil {
		s.errors++
		if s.firstErr == "" {
			s.firstErr = err.Error()
		}
		return
	}
	s.get, s.update = append(s.get, get), append(s.update, update)
}

// runOperator writes the status of the workers' calls, each worker its own call: get it
// from the API server, change a condition's message (so that every update is a real write
// to etcd), update the status subresource. Each worker starts a cycle every interval, or
// at once when the previous one took longer. Returns when ctx ends.
func runOperator(ctx context.Context, op *ident, calls []client.ObjectKey, interval time.Duration) *operatorSamples {
	s := &operatorSamples{}
	var wg sync.WaitGroup
	var writes atomic.Int64
	for _, key := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now()
			for ctx.Err() == nil {
				get, update, err := statusWrite(ctx, op.c, key, writes.Add(1))
				if ctx.Err() != nil {
					return // a cycle cut short by the end of the phase is not a sample
				}
				s.add(get, update, err)
				next = next.Add(interval)
				if wait := time.Until(next); wait > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				} else {
					next = time.Now()
					s.mu.Lock()
					s.late++
					s.mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return s
}

func statusWrite(ctx context.Context, c client.Client, key client.ObjectKey, n int64) (time.Duration, time.Duration, error) {
	start := time.Now()
	tc := &v1alpha1.ToolCall{}
	if err := c.Get(ctx, key, tc); err != nil {
		return 0, 0, err
	}
	got := time.Now()
	meta.SetStatusCondition(&tc.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionResolved, Status: metav1.ConditionUnknown, Reason: "Probe",
		Message: fmt.Sprintf("status write %d", n), ObservedGeneration: tc.Generation,
	})
	if err := c.Status().Update(ctx, tc); err != nil {
		return 0, 0, err
	}
	return got.Sub(start), time.Since(got), nil
}

// floodSamples are the agents' creates in one phase.
type floodSamples struct {
	mu       sync.Mutex
	latency  []time.Duration
	errors   int
	firstErr string
}

// runFlood has every agent create ToolCalls in ns with workers goroutines, back to back,
// until ctx ends. measuredFrom: creates that start earlier are not sampled (warm-up).
func runFlood(ctx context.Context, agents []*ident, ns string, workers int, measuredFrom time.Time) *floodSamples {
	s := &floodSamples{}
	var wg sync.WaitGroup
	for _, a := range agents {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					tc := toolgatetest.MakeToolCall("", ns).Tool("echo").Requester(a.name).
						Args(map[string]any{"text": "flood"}).Obj()
					tc.GenerateName = "flood-"
					start := time.Now()
					err := a.c.Create(ctx, tc)
					if ctx.Err() != nil || start.Before(measuredFrom) {
						continue
					}
					s.mu.Lock()
					if err != nil {
						s.errors++
						if s.firstErr == "" {
							s.firstErr = err.Error()
						}
					} else {
						s.latency = append(s.latency, time.Since(start))
					}
					s.mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	return s
}
