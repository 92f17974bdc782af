//go:build ignore

// Command kube-network-policies is the local cluster's NetworkPolicy enforcer:
// sigs.k8s.io/kube-network-policies (the SIG-Network reference implementation, NFQUEUE +
// nftables) run as a host process with a kubeconfig, plus a fail-closed guard for what that
// implementation leaves open on a single node. hack/k8s-binaries.sh copies this file into a
// wrapper module under bin/k8s-src and builds it into bin/k8s (never part of toolgate's module).
//
// kube-network-policies v0.8.0 decides each new connection it receives on an NFQUEUE, and
// sends packets there with nftables rules of its own: on the POSTROUTING hook, for the
// addresses of Pods that a policy selects. Three gaps follow here, all closed by the guard
// (iptables chain mangle/TOOLGATE-NETPOL, jumped to from INPUT and FORWARD for the Pod CIDR):
//   - this kernel has no nftables queue expression (CONFIG_NFT_QUEUE is not set), so its
//     own rules never load (it logs the failure and retries); it has the xtables NFQUEUE
//     target, which the guard uses instead;
//   - a Pod's connections to this machine itself (the API server at 10.0.0.1 → the node
//     address, the kubelet, anything listening here) go through INPUT, never POSTROUTING;
//   - a Pod's address is known only once the kubelet has published it (≈ 1–2 s after the
//     container started; NRI, which would close this, needs containerd 1.7+, not 1.6).
//
// For new connections from the Pod CIDR the guard queues those from or to a Pod that some
// NetworkPolicy selects (its podSelector, in its namespace, matches the Pod in this process's
// informers: the same caches the enforcer decides from), lets through those between Pods no
// policy selects (the enforcer would allow them: no policy applies to either end), and drops
// those from addresses no Pod has yet. The enforcer then applies the NetworkPolicies. With no
// enforcer listening on the queue, the kernel drops: fail closed.
//
// Why not queue everything: the enforcer retries its nftables sync (which cannot load here)
// on every Pod and policy change, and each failed transaction registers and unregisters
// netfilter hooks; the kernel drops every packet waiting in any NFQUEUE of the network
// namespace when a hook is unregistered (nfqnl_nf_hook_drop). A dropped SYN costs its
// connection the 1 s initial retransmission timeout: the operator's pods/attach and watch
// connections lost a second that way whenever a Pod came or went. A policy that starts to
// select a Pod is in force for its new connections once the guard resynced (milliseconds).
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

const guardChain = "TOOLGATE-NETPOL"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the enforcer's identity")
	nodeName := flag.String("hostname-override", "", "the node's name")
	podCIDR := flag.String("pod-cidr", "", "IPv4 Pod CIDR the guard covers (empty: no guard)")
	queueID := flag.Int("nfqueue-id", 100, "NFQUEUE number")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:10330", "address of /metrics and /healthz")
	klog.InitFlags(nil)
	flag.Parse()
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
	policies := factory.Networking().V1().NetworkPolicies()
	ctrl, err := networkpolicy.NewController(cs, policies,
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
		poke := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { g.poke() },
			UpdateFunc: func(any, any) { g.poke() },
			DeleteFunc: func(any) { g.poke() },
		}
		if _, err := pods.Informer().AddEventHandler(poke); err != nil {
			return err
		}
		if _, err := policies.Informer().AddEventHandler(poke); err != nil {
			return err
		}
		// Before any Pod is known: drop all new Pod connections (fail closed).
		if err := g.sync(nil, nil); err != nil {
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
		go g.loop(ctx, pods.Informer().GetIndexer(), policies.Informer().GetIndexer())
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

// loop rewrites the guard table whenever the Pod or NetworkPolicy informer changes
// (coalesced).
func (g *guard) loop(ctx context.Context, pods, policies cache.Indexer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.wake:
		}
		queued, open := g.classify(pods.List(), policies)
		if err := g.sync(queued, open); err != nil {
			klog.ErrorS(err, "syncing the guard table")
			time.Sleep(time.Second)
			g.poke()
		}
	}
}

// classify splits the Pod addresses in the guarded CIDR into those of Pods some
// NetworkPolicy selects (queued for the enforcer) and the rest (open).
func (g *guard) classify(pods []any, policies cache.Indexer) (queued, open []net.IP) {
	for _, obj := range pods {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.HostNetwork {
			continue
		}
		sel := selected(pod, policies)
		for _, ip := range pod.Status.PodIPs {
			p := net.ParseIP(ip.IP).To4()
			switch {
			case p == nil || !g.cidr.Contains(p):
			case sel:
				queued = append(queued, p)
			default:
				open = append(open, p)
			}
		}
	}
	return queued, open
}

// selected reports whether a NetworkPolicy of the Pod's namespace selects it; a policy
// whose selector cannot be read counts as selecting it (the enforcer then decides).
func selected(pod *v1.Pod, policies cache.Indexer) bool {
	objs, err := policies.ByIndex(cache.NamespaceIndex, pod.Namespace)
	if err != nil {
		return true
	}
	for _, obj := range objs {
		np, ok := obj.(*networkingv1.NetworkPolicy)
		if !ok {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || s.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// sync rewrites the guard chain in one iptables-restore (the chain's rules are replaced
// atomically) and makes sure mangle INPUT and FORWARD jump to it. The mangle table runs
// before filter, where kube-proxy puts its accepting rules; the jumps are appended, after
// hack/cluster's TOOLGATE-EGRESS, because a queue's accept verdict skips the rest of the
// table's chain.
func (g *guard) sync(queued, open []net.IP) error {
	for _, ips := range [][]net.IP{queued, open} {
		sort.Slice(ips, func(i, j int) bool { return string(ips[i]) < string(ips[j]) })
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*mangle\n:%s - [0:0]\n", guardChain)
	fmt.Fprintf(&b, "-A %s -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN\n", guardChain)
	for _, ip := range queued {
		fmt.Fprintf(&b, "-A %s -s %s/32 -j NFQUEUE --queue-num %d\n", guardChain, ip, g.queueID)
		fmt.Fprintf(&b, "-A %s -d %s/32 -j NFQUEUE --queue-num %d\n", guardChain, ip, g.queueID)
	}
	for _, ip := range open {
		fmt.Fprintf(&b, "-A %s -s %s/32 -j RETURN\n", guardChain, ip)
	}
	fmt.Fprintf(&b, "-A %s -s %s -j DROP\nCOMMIT\n", guardChain, g.cidr)
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %v: %s", err, out)
	}
	for _, hook := range []string{"INPUT", "FORWARD"} {
		rule := []string{hook, "-s", g.cidr.String(), "-j", guardChain}
		if exec.Command("iptables", append([]string{"-w", "-t", "mangle", "-C"}, rule...)...).Run() == nil {
			continue
		}
		if out, err := exec.Command("iptables", append([]string{"-w", "-t", "mangle", "-A"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables -t mangle -A %s: %v: %s", hook, err, out)
		}
	}
	return nil
}
