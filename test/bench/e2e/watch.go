package main

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func terminatedContainer(p *corev1.Pod) (string, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("%s exit %d %s", s.Name, t.ExitCode, t.Reason), true
		}
	}
	return "", false
}

func jobCond(j *batchv1.Job, ty batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == ty && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func handle(r *recorder, obj client.Object, now time.Time) {
	switch o := obj.(type) {
	case *toolgatev1alpha1.ToolCall:
		r.count(o.Name) // every write to the call the watch shows
		switch o.Status.Phase {
		case toolgatev1alpha1.PhaseSucceeded, toolgatev1alpha1.PhaseFailed, toolgatev1alpha1.PhaseDenied:
			note := string(o.Status.Phase)
			if o.Status.Result != nil && o.Status.Result.Reason != "" {
				note += "/" + o.Status.Result.Reason
			}
			r.mark("tc/"+o.Name+"/terminal", now, note)
		}
	case *batchv1.Job:
		if call := o.Labels[podcontract.LabelCall]; call != "" {
			r.mark("tc/"+call+"/job", now, o.Name)
			if jobCond(o, batchv1.JobComplete) {
				r.mark("tc/"+call+"/job-complete", now, "")
			}
			return
		}
		if o.Labels[benchLabel] == "" {
			return
		}
		if jobCond(o, batchv1.JobComplete) {
			r.mark("job/"+o.Name+"/done", now, "Complete")
		}
		if jobCond(o, batchv1.JobFailed) {
			r.mark("job/"+o.Name+"/failed", now, "Failed")
		}
	case *corev1.Pod:
		poolPodEvent(o, now)
		note, term := terminatedContainer(o)
		if call := o.Labels[podcontract.LabelCall]; call != "" {
			r.mark("tc/"+call+"/pod", now, o.Name)
			if term {
				r.mark("tc/"+call+"/pod-term", now, note)
			}
			return
		}
		if o.Labels[benchLabel] == "" {
			return
		}
		key := "pod/" + o.Name
		if j := o.Labels["batch.kubernetes.io/job-name"]; j != "" {
			key = "job/" + j
		}
		if term {
			r.mark(key+"/pod-term", now, note)
		}
	}
}

// watchLoop lists (for a resourceVersion) then watches, reopening from the last seen
// version when the server closes the watch. ready is closed once the first watch is open.
func watchLoop(ctx context.Context, c client.WithWatch, list client.ObjectList, r *recorder, ready chan<- struct{}) error {
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	rv := list.(metav1.ListInterface).GetResourceVersion()
	first := true
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
		if err != nil {
			if first {
				return err
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if first {
			close(ready)
			first = false
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				// Most likely 410 Gone: re-list for a fresh version.
				if err := c.List(ctx, list, client.InNamespace(ns)); err == nil {
					rv = list.(metav1.ListInterface).GetResourceVersion()
				}
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				handle(r, obj, now)
			}
		}
		w.Stop()
	}
	return nil
}
