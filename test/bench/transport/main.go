// Command transport measures the operator <-> Pod transports a session executor could use
// (issue 32, item 3) on the real local cluster: one long-running Pod per runtime (runc, and
// gVisor with -runtimes runc,gvisor) in its own namespace, serving small handover requests
// (~200 bytes of JSON with an HMAC) with small result frames (~300 bytes), and N sequential
// round trips per series after a warm-up, interleaved (each round runs every series of every
// runtime once, the order rotated per round) so that load affects all series alike.
//
// The Pod's container is test/bench/transport/responder (a static Go binary, packed and
// imported into the cluster's containerd unless -build=false): PID 1 answers on stdin (the
// container has stdin: true, stdinOnce: false, tty: false), a Unix socket, TCP :8080 and
// mutual TLS :8443. The series (-series, comma-separated; all by default):
//
//	attach-ws, attach-spdy  a new pods/attach stream per call (client-go remotecommand,
//	                        WebSocket or SPDY executor)
//	exec-ws, exec-spdy      a new pods/exec per call of a tiny client that forwards the
//	                        request to PID 1 over the Unix socket (process start included)
//	bare-ws, bare-spdy      a bare exec of a binary that prints a fixed line: what
//	                        Kubernetes charges for one command in a running container
//	tcp-new, tcp-keep       direct TCP to the Pod IP from the host: a new connection per
//	                        call, or one kept-alive connection
//	tls-new, tls-keep       the same over mutual TLS 1.3
//
// -netpol first applies a NetworkPolicy that admits only the bench host and an operator
// stand-in Pod to the listeners; -pod-client N measures N Pod-to-Pod round trips from that
// stand-in Pod. It prints p50/p95/p99/max per series and runtime, the connect/end breakdowns,
// the gVisor/runc ratios, the load average before and after, and who reaches each listener; see
// docs/reports/2026-12-06-session-transport.md.
//
//	go run ./test/bench/transport -kubeconfig /path/to/kubeconfig -n 100 -runtimes runc,gvisor
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const benchLabel = "toolgate.dev/bench-transport"

type options struct {
	n, warmup   int
	kubeconfig  string
	clusterRoot string
	ns, image   string
	runtimes    []string
	series      []seriesDef
	build, keep bool
	netpol      bool
	podClient   int
	timeout     time.Duration
}

func main() {
	var o options
	var runtimes, series string
	flag.IntVar(&o.n, "n", 100, "measured round trips of each series (per runtime)")
	flag.IntVar(&o.warmup, "warmup", 5, "unmeasured rounds first")
	flag.StringVar(&o.clusterRoot, "cluster-root", ".", "the checkout whose hack/cluster.sh loads the image and whose .cluster/kubeconfig is the default")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default <cluster-root>/.cluster/kubeconfig)")
	flag.StringVar(&o.ns, "namespace", "transport-bench", "the bench's own namespace (created; deleted at the end unless -keep)")
	flag.StringVar(&o.image, "image", "toolgate.local/transport-responder:dev", "the responder's image")
	flag.BoolVar(&o.build, "build", true, "build the responder, pack it and import it into the cluster first")
	flag.BoolVar(&o.keep, "keep", false, "keep the namespace and its Pods at the end")
	flag.StringVar(&runtimes, "runtimes", "runc", "comma-separated runtimes: runc (the default runtime), or a RuntimeClass name such as gvisor")
	flag.BoolVar(&o.netpol, "netpol", false, "first apply a NetworkPolicy that lets only the bench host and the -pod-client stand-in Pod (the operator's stand-ins) reach the listeners; the reachability check at the end then shows other Pods refused")
	flag.IntVar(&o.podClient, "pod-client", 0, "after the series, this many Pod-to-Pod round trips (new TCP connection each, then one kept-alive) from an operator stand-in Pod (runc) to each responder (0: none)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "per round trip timeout")
	var help strings.Builder
	for _, s := range allSeries {
		fmt.Fprintf(&help, "\n  %-12s %s", s.name, s.help)
	}
	flag.StringVar(&series, "series", "", "comma-separated series (default all):"+help.String())
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), "Usage: go run ./test/bench/transport [flags]\n"+
			"The operator<->Pod transport benchmark (issue 32 item 3): per runtime one long-running Pod in its own\n"+
			"namespace; -n sequential round trips (~200-byte request, ~300-byte response) per series, interleaved\n"+
			"round-robin across series and runtimes; p50/p95/p99/max per series, the load average before/after.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	kf := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kf)
	_ = kf.Parse([]string{"-logtostderr=false", "-alsologtostderr=false", "-stderrthreshold=FATAL", "-legacy_stderr_threshold_behavior=false"})
	klog.SetOutput(&klogLines)
	o.runtimes = strings.Split(runtimes, ",")
	for _, s := range allSeries {
		if series == "" || contains(strings.Split(series, ","), s.name) {
			o.series = append(o.series, s)
		}
	}
	if len(o.series) == 0 {
		fmt.Fprintln(os.Stderr, "bench-transport: no series selected")
		os.Exit(2)
	}
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(o.clusterRoot, ".cluster", "kubeconfig")
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-transport:", err)
		os.Exit(1)
	}
}

// klogLines counts client-go's log lines: the "use of closed network connection" errors
// its stream goroutines log when an attach stream is cancelled after its response.
var klogLines lineCounter

type lineCounter struct {
	mu sync.Mutex
	n  int
}

func (l *lineCounter) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.n += bytes.Count(p, []byte("\n"))
	l.mu.Unlock()
	return len(p), nil
}

func (l *lineCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.TrimSpace(y) == x {
			return true
		}
	}
	return false
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

func run(o options) (err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cr, err := newCreds()
	if err != nil {
		return err
	}
	if o.build {
		if err := buildImage(o); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if err := ensureNamespace(ctx, cs, o.ns); err != nil {
		return err
	}
	if !o.keep {
		defer func() {
			fmt.Fprintf(os.Stderr, "deleting namespace %s...\n", o.ns)
			if derr := deleteNamespace(cs, o.ns); derr != nil && err == nil {
				err = fmt.Errorf("delete namespace %s: %w", o.ns, derr)
			}
		}()
	}
	b := &bench{o: o, cfg: cfg, cs: cs, cr: cr}
	var targets []*target
	for _, rt := range o.runtimes {
		ip, err := startPod(ctx, cs, o, responderPod(o, rt, cr))
		if err != nil {
			return err
		}
		targets = append(targets, &target{rt: rt, pod: "responder-" + rt, ip: ip})
		fmt.Fprintf(os.Stderr, "pod responder-%s: %s\n", rt, ip)
	}
	if o.podClient > 0 {
		p := responderPod(o, "runc", cr)
		p.Name, p.Labels = standinPod, map[string]string{benchLabel: "operator"}
		if _, err := startPod(ctx, cs, o, p); err != nil {
			return err
		}
	}
	if o.netpol {
		src, err := operatorSource(targets[0].ip)
		if err != nil {
			return err
		}
		if err := ensureNetworkPolicy(ctx, cs, o.ns, src); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "NetworkPolicy: ingress to :8080/:8443 only from %s/32\n", src)
		time.Sleep(3 * time.Second) // the enforcer's informer
	}
	type key struct{ rt, series string }
	res := map[key][]sample{}
	var order []key
	for _, t := range targets {
		for _, s := range o.series {
			order = append(order, key{t.rt, s.name})
		}
	}
	byName := map[string]seriesDef{}
	for _, s := range o.series {
		byName[s.name] = s
	}
	tgt := map[string]*target{}
	for _, t := range targets {
		tgt[t.rt] = t
	}
	loadBefore, started := loadavg(), time.Now()
	seq := 0
	for round := 0; round < o.warmup+o.n; round++ {
		for i := range order {
			k := order[(i+round)%len(order)]
			seq++
			s := byName[k.series].run(b, ctx, tgt[k.rt], seq)
			if s.err != nil {
				fmt.Fprintf(os.Stderr, "round %d %s/%s: %v\n", round, k.rt, k.series, s.err)
			}
			if round >= o.warmup {
				res[key{k.rt, k.series}] = append(res[key{k.rt, k.series}], s)
			}
		}
		if (round+1)%10 == 0 {
			fmt.Fprintf(os.Stderr, "round %d/%d, load %s\n", round+1, o.warmup+o.n, loadavg())
		}
	}
	for _, t := range targets {
		for _, c := range []*lineConn{t.tcp, t.tls} {
			if c != nil {
				_ = c.c.Close()
			}
		}
	}
	rows := map[string]map[string][]sample{}
	for k, v := range res {
		if rows[k.rt] == nil {
			rows[k.rt] = map[string][]sample{}
		}
		rows[k.rt][k.series] = v
	}
	report(o, rows, loadBefore, loadavg(), time.Since(started))
	fmt.Printf("client-go log lines (stream teardown errors of cancelled attach streams): %d\n", klogLines.count())
	b.reachability(ctx, targets)
	if o.podClient > 0 {
		fmt.Printf("\nPod to Pod, from %s (runc) to each responder's :8080 (ms):\n", standinPod)
		for _, t := range targets {
			out := b.run(ctx, standinPod, "/responder", "rtt", net.JoinHostPort(t.ip, "8080"), strconv.Itoa(o.podClient))
			fmt.Printf("  -> %s: %s\n", t.pod, strings.ReplaceAll(out, "\n", "; "))
		}
	}
	return nil
}
