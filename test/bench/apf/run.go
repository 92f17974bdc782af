package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// bench is the running harness: envtest, the identities, the rendered objects.
type bench struct {
	o        options
	env      *toolgatetest.Env
	cs       *kubernetes.Clientset
	objs     []client.Object
	opSchema string
	op       *ident
	agents   []*ident
	probes   []client.ObjectKey
	apfOn    bool
}

func run(ctx context.Context, o options) (*report, error) {
	env, err := startEnv(o)
	if err != nil {
		return nil, err
	}
	defer func() { _ = env.Stop() }()
	b := &bench{o: o, env: env}
	rep, err := b.setup(ctx)
	if err != nil {
		return nil, err
	}
	for round := 1; round <= o.rounds; round++ {
		order := []bool{false, true}
		if round%2 == 0 {
			order = []bool{true, false}
		}
		for _, apf := range order {
			if err := b.setAPF(ctx, apf); err != nil {
				return nil, err
			}
			for _, flood := range []bool{false, true} {
				p, err := b.phase(ctx, round, apf, flood)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(os.Stderr, "round %d %-9s operator update p50 %.1f ms p99 %.1f ms; agents %.0f creates/s\n",
					round, p.Name, p.OperatorUpdate.P50, p.OperatorUpdate.P99, p.AgentCreatesPerSec)
				rep.Phases = append(rep.Phases, p)
			}
		}
	}
	rep.summarise()
	return rep, nil
}

func (b *bench) setup(ctx context.Context) (*report, error) {
	var err error
	if b.cs, err = kubernetes.NewForConfig(b.env.Config); err != nil {
		return nil, err
	}
	rep := &report{Options: b.o.describe(), LoadStart: loadavg()}
	if b.objs, rep.Rendering, err = apfObjects(b.o, b.env.Config); err != nil {
		return nil, err
	}
	ns, sa, err := operatorSubject(b.objs)
	if err != nil {
		return nil, err
	}
	b.opSchema = ""
	for _, obj := range b.objs {
		if strings.HasSuffix(obj.GetName(), "-operator") {
			b.opSchema = obj.GetName()
		}
	}
	name, groups := serviceAccountIdentity(ns, sa)
	rep.Operator = name
	if b.op, err = newIdent(b.env, name, groups); err != nil {
		return nil, err
	}
	for i := range b.o.agents {
		name, groups := serviceAccountIdentity("agents", fmt.Sprintf("agent-%d", i))
		if b.o.agentKind == "user" {
			name, groups = fmt.Sprintf("agent-%d", i), nil
		}
		a, err := newIdent(b.env, name, groups)
		if err != nil {
			return nil, err
		}
		b.agents = append(b.agents, a)
	}
	rep.Agents = fmt.Sprintf("%d × %s (%s), %d goroutines each", b.o.agents, b.agents[0].name, b.o.agentKind, b.o.agentWorkers)
	probeNS, err := b.env.CreateNamespace(ctx, "operator")
	if err != nil {
		return nil, err
	}
	for i := range b.o.operatorWorkers {
		tc := toolgatetest.MakeToolCall(fmt.Sprintf("probe-%d", i), probeNS.Name).Tool("echo").Obj()
		if err := b.env.Client.Create(ctx, tc); err != nil {
			return nil, err
		}
		b.probes = append(b.probes, client.ObjectKeyFromObject(tc))
	}
	return rep, nil
}

// setAPF applies or removes the chart's objects and waits until the operator's requests
// are classified accordingly.
func (b *bench) setAPF(ctx context.Context, on bool) error {
	if on == b.apfOn {
		return nil
	}
	b.apfOn = on
	probe := func(ctx context.Context) error { return b.op.c.Get(ctx, b.probes[0], &v1alpha1.ToolCall{}) }
	if on {
		if err := applyAPF(ctx, b.env.Client, b.objs); err != nil {
			return err
		}
		return waitClassified(ctx, b.env.Client, b.op.rec, probe, b.opSchema)
	}
	if err := removeAPF(ctx, b.env.Client, b.objs); err != nil {
		return err
	}
	want := "service-accounts" // the suggested schema of every ServiceAccount
	return waitClassified(ctx, b.env.Client, b.op.rec, probe, want)
}

func (b *bench) phase(ctx context.Context, round int, apf, flood bool) (phaseResult, error) {
	p := phaseResult{Round: round, APF: apf, Flood: flood, Name: phaseName(apf, flood)}
	ns, err := b.env.CreateNamespace(ctx, "flood")
	if err != nil {
		return p, err
	}
	sleep(ctx, b.o.settle)
	p.LoadBefore = loadavg()
	phaseCtx, stopFlood := context.WithCancel(ctx)
	defer stopFlood()
	measuredFrom := time.Now()
	var fl *floodSamples
	floodDone := make(chan struct{})
	if flood {
		measuredFrom = measuredFrom.Add(b.o.warmup)
		go func() { fl = runFlood(phaseCtx, b.agents, ns.Name, b.o.agentWorkers, measuredFrom); close(floodDone) }()
		sleep(ctx, time.Until(measuredFrom))
	} else {
		close(floodDone)
	}
	before, err := scrapeAPF(ctx, b.cs)
	if err != nil {
		return p, err
	}
	agents429, op429 := b.agents429(), b.op.tooMany.Load()
	opCtx, stopOp := context.WithTimeout(phaseCtx, b.o.duration)
	ops := runOperator(opCtx, b.op, b.probes, b.o.operatorInterval)
	stopOp()
	window := time.Since(measuredFrom)
	after, err := scrapeAPF(ctx, b.cs)
	if err != nil {
		return p, err
	}
	stopFlood()
	<-floodDone
	p.LoadAfter = loadavg()
	p.fillOperator(ops, window, b.op.tooMany.Load()-op429)
	p.Agents429 = b.agents429() - agents429
	if fl != nil {
		p.fillFlood(fl, window)
	}
	p.Levels = deltas(before, after)
	names, err := levelNames(ctx, b.env.Client)
	if err != nil {
		return p, err
	}
	p.OperatorSchema = names[string(b.op.rec.Last().FlowSchemaUID)] + "/" + names[string(b.op.rec.Last().PriorityLevelUID)]
	if flood {
		last := b.agents[0].rec.Last()
		p.AgentSchema = names[string(last.FlowSchemaUID)] + "/" + names[string(last.PriorityLevelUID)]
	}
	return p, b.clean(ctx, ns)
}

func (b *bench) agents429() int64 {
	var n int64
	for _, a := range b.agents {
		n += a.tooMany.Load()
	}
	return n
}

// clean deletes the flood's calls (envtest runs no namespace controller).
func (b *bench) clean(ctx context.Context, ns *corev1.Namespace) error {
	if err := b.env.Client.DeleteAllOf(ctx, &v1alpha1.ToolCall{}, client.InNamespace(ns.Name)); err != nil {
		return fmt.Errorf("deleting the flood's calls: %w", err)
	}
	return b.env.Client.Delete(ctx, ns, &client.DeleteOptions{PropagationPolicy: ptrTo(metav1.DeletePropagationBackground)})
}

func ptrTo[T any](v T) *T { return &v }

func phaseName(apf, flood bool) string {
	name := map[bool]string{false: "quiet", true: "flood"}[flood]
	if apf {
		name += "+apf"
	}
	return name
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// loadavg is the 1, 5 and 15 minute load averages (/proc/loadavg).
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
