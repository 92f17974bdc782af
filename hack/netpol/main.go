//go:build ignore

// Command kube-network-policies is the local cluster's NetworkPolicy enforcer:
// sigs.k8s.io/kube-network-policies (the SIG-Network reference implementation, NFQUEUE +
// nftables) run as a host process with a kubeconfig, plus a fail-closed guard for what that
// implementation leaves open on a single node. hack/k8s-binaries.sh copies this file into a
// wrapper module under bin/k8s-src and builds it into bin/k8s (never part of toolgate's module).
//
// kube-network-policies v0.8.0 sends to its queue only packets on the POSTROUTING hook whose
// address is in its set of Pods selected by a policy. Two gaps follow, both closed by the
// guard table (inet toolgate-netpol-guard):
//   - a Pod's connections to this machine itself (the API server at 10.0.0.1 → the node
//     address, the kubelet, anything listening here) go through INPUT, never POSTROUTING;
//   - a Pod's IP is in that set only once the kubelet has published it (≈ 1–2 s after the
//     container started; NRI, which would close this, needs containerd 1.7+, not 1.6):
//     until then its traffic was accepted.
//
// The guard, on the FORWARD and INPUT hooks, for new connections from the Pod CIDR: drops
// those from an address no Pod has in this process's Pod informer yet (the same cache the
// enforcer decides from), and queues the rest to the enforcer, which applies the
// NetworkPolicies (a Pod no policy selects is allowed). Without the enforcer running, the
// queue drops: fail closed.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

const guardTable = "toolgate-netpol-guard"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the enforcer's identity")
	nodeName := flag.String("hostname-override", "", "the node's name")
	podCIDR := flag.String("pod-cidr", "", "IPv4 Pod CIDR the guard covers (empty: no guard)")
	queueID := flag.Int("nfqueue-id", 100, "NFQUEUE number")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:10330", "address of /metrics and /healthz")
	cleanup := flag.Bool("cleanup", false, "delete the nftables tables this command makes and exit")
	klog.InitFlags(nil)
	flag.Parse()
	if *cleanup {
		os.Exit(deleteTables())
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()
	if err := run(ctx, *kubeconfig, *nodeName, *podCIDR, *queueID, *metricsAddr); err != nil {
		klog.ErrorS(err, "kube-network-policies")
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, nodeName, podCIDR string, queueID int, metricsAddr string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods()
	ctrl, err := networkpolicy.NewController(cs, factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(), pods, nil, nil, nil, nil,
		networkpolicy.Config{QueueID: queueID, NodeName: nodeName, NetfilterBug1766Fix: true})
	if err != nil {
		return err
	}
	var g *guard
	if podCIDR != "" {
		if g, err = newGuard(podCIDR, queueID); err != nil {
			return err
		}
		if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { g.poke() },
			UpdateFunc: func(any, any) { g.poke() },
			DeleteFunc: func(any) { g.poke() },
		}); err != nil {
			return err
		}
		// Before any Pod is known: drop all new Pod connections (fail closed).
		if err := g.sync(nil); err != nil {
			return err
		}
	}
	http.Handle("/metrics", promhttp.Handler())
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	go func() { klog.ErrorS(http.ListenAndServe(metricsAddr, nil), "metrics server") }()
	go func() {
		if err := ctrl.Run(ctx); err != nil {
			// Better no enforcer (the queue then drops) than one half running.
			klog.ErrorS(err, "network policy controller")
			os.Exit(1)
		}
	}()
	factory.Start(ctx.Done())
	if g != nil {
		go g.loop(ctx, pods.Informer().GetIndexer())
	}
	<-ctx.Done()
	return nil
}

type guard struct {
	cidr    *net.IPNet
	queueID uint16
	wake    chan struct{}
}

func newGuard(cidr string, queueID int) (*guard, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("--pod-cidr %q: want an IPv4 CIDR", cidr)
	}
	return &guard{cidr: n, queueID: uint16(queueID), wake: make(chan struct{}, 1)}, nil
}

func (g *guard) poke() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// loop rewrites the guard table whenever the Pod informer changes (coalesced).
func (g *guard) loop(ctx context.Context, pods cache.Indexer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		}
		var ips []net.IP
		for _, obj := range pods.List() {
			pod, ok := obj.(*v1.Pod)
			if !ok || pod.Spec.HostNetwork {
				continue
			}
			for _, ip := range pod.Status.PodIPs {
				if p := net.ParseIP(ip.IP).To4(); p != nil && g.cidr.Contains(p) {
					ips = append(ips, p)
				}
			}
		}
		if err := g.sync(ips); err != nil {
			klog.ErrorS(err, "syncing the guard table")
			time.Sleep(time.Second)
			g.poke()
		}
	}
}

// sync replaces the guard table in one transaction.
func (g *guard) sync(ips []net.IP) error {
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	table := &nftables.Table{Name: guardTable, Family: nftables.TableFamilyINet}
	conn.AddTable(table)
	conn.DelTable(table)
	conn.AddTable(table)
	set := &nftables.Set{Table: table, Name: "known-pods-v4", KeyType: nftables.TypeIPAddr}
	sort.Slice(ips, func(i, j int) bool { return string(ips[i]) < string(ips[j]) })
	elems := make([]nftables.SetElement, 0, len(ips))
	for _, ip := range ips {
		elems = append(elems, nftables.SetElement{Key: ip})
	}
	if err := conn.AddSet(set, elems); err != nil {
		return err
	}
	for _, hook := range []struct {
		name string
		num  *nftables.ChainHook
	}{{"forward", nftables.ChainHookForward}, {"input", nftables.ChainHookInput}} {
		chain := conn.AddChain(&nftables.Chain{Name: hook.name, Table: table, Type: nftables.ChainTypeFilter,
			Hooknum: hook.num, Priority: nftables.ChainPriorityRef(*nftables.ChainPriorityFilter - 5)})
		for _, exprs := range g.rules(set) {
			conn.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: exprs})
		}
	}
	return conn.Flush()
}

// rules: ct state established,related accept; ip saddr CIDR ip saddr != @known drop;
// ip saddr CIDR queue num N.
func (g *guard) rules(set *nftables.Set) [][]expr.Any {
	fromPods := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: g.cidr.Mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: g.cidr.IP.To4()},
	}
	saddr := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4}
	established := []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
	unknown := append(append([]expr.Any{}, fromPods...), saddr,
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: true},
		&expr.Verdict{Kind: expr.VerdictDrop})
	queue := append(append([]expr.Any{}, fromPods...), &expr.Queue{Num: g.queueID})
	return [][]expr.Any{established, unknown, queue}
}

// deleteTables removes the guard table and kube-network-policies' own table, if present.
func deleteTables() int {
	conn, err := nftables.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, t := range tables {
		if t.Name == guardTable || t.Name == "kube-network-policies" {
			conn.DelTable(t)
		}
	}
	if err := conn.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
