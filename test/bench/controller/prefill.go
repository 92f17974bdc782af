package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Prefill is the memory of an operator with many finished calls in the cluster (-prefill
// N): after the run, with the operator stopped, the harness writes N more finished calls,
// each a copy of a call the operator finished in the run (its spec and its whole terminal
// status, result content included), straight through the API; then a new operator process
// lists them, caches them as it caches any terminal call, and reconciles each once.
type Prefill struct {
	Calls int `json:"calls"`
	// Template is the run's call the copies are made of.
	Template string `json:"template"`
	// Seconds is how long writing them took.
	Seconds float64 `json:"seconds"`
	// Restarted is a new operator process's memory once it has listed and reconciled
	// every call (its reconcile count quiet for 10 s).
	Restarted Memory `json:"operatorMemory"`
	// EtcdDB* are etcd's database size and the part in use before and after the writes.
	EtcdDBBefore, EtcdDBAfter, EtcdInUseBefore, EtcdInUseAfter int64
}

// prefill writes n finished copies of template with 16 writers.
func prefill(ctx context.Context, c client.Client, template *v1alpha1.ToolCall, n int) error {
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := prefillOne(ctx, c, template, fmt.Sprintf("fill-%05d", i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
		if i > 0 && i%1000 == 0 {
			progress(fmt.Sprintf("prefilled %d", i))
		}
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d prefilled calls failed, first: %w", len(errs), n, errs[0])
	}
	return nil
}

func prefillOne(ctx context.Context, c client.Client, template *v1alpha1.ToolCall, name string) error {
	call := &v1alpha1.ToolCall{}
	call.Namespace, call.Name = template.Namespace, name
	call.Labels = template.Labels
	call.Spec = *template.Spec.DeepCopy()
	if err := c.Create(ctx, call); err != nil {
		return err
	}
	call.Status = *template.Status.DeepCopy()
	return c.Status().Update(ctx, call)
}

// settled waits until the reconciles count (read by count) has not moved for quiet, or ctx ends.
func settled(ctx context.Context, count func() int, quiet time.Duration) error {
	last, since := count(), time.Now()
	for time.Since(since) < quiet {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if n := count(); n != last {
			last, since = n, time.Now()
		}
	}
	return nil
}

// runPrefill is the -prefill step of run: with the operator process stopped (it would
// admit the copies before their status is written), write the copies, then start a new
// operator process and measure it once it has listed and reconciled every call.
func runPrefill(ctx context.Context, hc client.Client, ops *operators, etcdURL, ns string, o options, calls map[string]callTimes) (*Prefill, error) {
	if ops.child == nil {
		return nil, errors.New("-prefill needs -operator-process")
	}
	var template *v1alpha1.ToolCall
	for name := range calls {
		call := &v1alpha1.ToolCall{}
		if err := hc.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call); err == nil && call.Status.Phase == v1alpha1.PhaseSucceeded {
			template = call
			break
		}
	}
	if template == nil {
		return nil, errors.New("no Succeeded call to copy")
	}
	p := &Prefill{Calls: o.prefill, Template: template.Name}
	if err := ops.child.stop(); err != nil {
		return nil, err
	}
	p.EtcdDBBefore, p.EtcdInUseBefore, _ = etcdDB(ctx, etcdURL)
	progress(fmt.Sprintf("operator stopped; prefilling %d finished calls (copies of %s)", o.prefill, template.Name))
	start := time.Now()
	if err := prefill(ctx, hc, template, o.prefill); err != nil {
		return nil, err
	}
	p.Seconds = time.Since(start).Seconds()
	p.EtcdDBAfter, p.EtcdInUseAfter, _ = etcdDB(ctx, etcdURL)
	progress("starting a new operator process")
	if err := ops.startChild(o); err != nil {
		return p, err
	}
	reconciled := func() int {
		_, r := ops.registryCounts()
		n := 0
		for _, v := range r {
			n += v
		}
		return n
	}
	if err := settled(ctx, reconciled, 10*time.Second); err != nil {
		return p, err
	}
	p.Restarted = ops.operatorMemory()
	return p, nil
}
