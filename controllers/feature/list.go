package feature

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// List is every feature, in order; its methods run a hook over the features that
// implement it (and, but for Admit, ClassifyPod and the policies, that the call's tool
// uses). The reconciler and the executors call features only through it.
type List []Feature

// Used is the set of the features spec uses.
func (l List) Used(spec *v1alpha1.ToolSpec) Set {
	var s Set
	for _, f := range l.usedBy(spec) {
		s = append(s, f.Name())
	}
	return s
}

// used are the features the call's tool snapshot uses.
func (l List) used(call *v1alpha1.ToolCall) List {
	if call.Status.Tool == nil {
		return nil
	}
	return l.usedBy(call.Status.Tool.Spec)
}

// usedBy are the features spec uses (none for no spec).
func (l List) usedBy(spec *v1alpha1.ToolSpec) List {
	if spec == nil {
		return nil
	}
	var out List
	for _, f := range l {
		if f.Uses(spec) {
			out = append(out, f)
		}
	}
	return out
}

// Admit is the first Deny of a feature's admission, else an Allow.
func (l List) Admit(a Admission) pipeline.Decision {
	for _, f := range l {
		if ad, ok := f.(Admitter); ok {
			if d := ad.Admit(a); d.Verdict == pipeline.Deny {
				return d
			}
		}
	}
	return pipeline.Decision{Verdict: pipeline.Allow}
}

// PrepareInput runs the used features' InputPreparer, in order, until one is not ok.
func (l List) PrepareInput(ctx context.Context, call *v1alpha1.ToolCall, attempt int32, in *podspec.Input) (executor.Step, bool, error) {
	for _, f := range l.used(call) {
		if p, ok := f.(InputPreparer); ok {
			if st, ok, err := p.PrepareInput(ctx, call, attempt, in); !ok {
				return st, false, err
			}
		}
	}
	return executor.Step{}, true, nil
}

// Prestartable reports whether a session Pod for tool other may be started alongside a
// session's first call of tool called: a feature both use shares their session
// (Prestarter), no feature other uses prepares per attempt (InputPreparer), and none says
// other's Pod depends on its call.
func (l List) Prestartable(called, other *v1alpha1.ToolSpec) bool {
	shared := false
	for _, f := range l.usedBy(other) {
		if _, ok := f.(InputPreparer); ok {
			return false
		}
		p, ok := f.(Prestarter)
		if !ok {
			continue
		}
		if !p.Prestartable(other) {
			return false
		}
		shared = shared || f.Uses(called)
	}
	return shared
}

// PreparePod runs the used features' PodPreparer, in order, until one is not ok.
func (l List) PreparePod(ctx context.Context, call *v1alpha1.ToolCall, pod Pod) (executor.Step, bool, error) {
	for _, f := range l.used(call) {
		if p, ok := f.(PodPreparer); ok {
			if st, ok, err := p.PreparePod(ctx, call, pod); !ok {
				return st, false, err
			}
		}
	}
	return executor.Step{}, true, nil
}

// Running tells the used features of the running attempt's Pod: the soonest retry asked
// for (0: none).
func (l List) Running(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod) time.Duration {
	var soonest time.Duration
	for _, f := range l.used(call) {
		if w, ok := f.(RunningWatcher); ok {
			if d := w.Running(ctx, call, pod); d > 0 && (soonest == 0 || d < soonest) {
				soonest = d
			}
		}
	}
	return soonest
}

// ClassifyPod is the first ending a feature reads from pod.
func (l List) ClassifyPod(pod *corev1.Pod) (reason, detail string, ended bool) {
	for _, f := range l {
		if c, ok := f.(PodClassifier); ok {
			if reason, detail, ended := c.ClassifyPod(pod); ended {
				return reason, detail, true
			}
		}
	}
	return "", "", false
}

// ClassifyEnding is the first refusal a used feature puts in o's place.
func (l List) ClassifyEnding(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (executor.Step, bool) {
	for _, f := range l.used(call) {
		if c, ok := f.(EndingClassifier); ok {
			if st, ok := c.ClassifyEnding(ctx, call, o); ok {
				return st, true
			}
		}
	}
	return executor.Step{}, false
}

// AfterEnd runs the used features' AfterEnder on attempt n.
func (l List) AfterEnd(ctx context.Context, call *v1alpha1.ToolCall, n int) {
	for _, f := range l.used(call) {
		if a, ok := f.(AfterEnder); ok {
			a.AfterEnd(ctx, call, n)
		}
	}
}

// SessionSafe says whether a call of spec's tool may run beside its session's other
// calls: the first used feature that decides, else the tool's concurrencySafe.
func (l List) SessionSafe(spec *v1alpha1.ToolSpec) bool {
	for _, f := range l {
		if o, ok := f.(SessionOrderer); ok && spec != nil && f.Uses(spec) {
			if safe, decided := o.SessionSafe(spec); decided {
				return safe
			}
		}
	}
	return spec != nil && spec.ConcurrencySafe
}

// Policies are the NetworkPolicies every feature adds to namespace's isolation.
func (l List) Policies(namespace string) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for _, f := range l {
		if p, ok := f.(NetworkPolicies); ok {
			out = append(out, p.Policies(namespace)...)
		}
	}
	return out
}

// PolicyNames are the names of every feature's NetworkPolicies.
func (l List) PolicyNames() []string {
	var out []string
	for _, f := range l {
		if p, ok := f.(NetworkPolicies); ok {
			out = append(out, p.PolicyNames()...)
		}
	}
	return out
}
