// Command egress-proxy is toolgate's egress proxy: the only destination of a tool Pod whose
// Tool names sandbox.egress.allow. It lets a body's HTTP(S) requests through to the hosts
// its call's signed grant allows (CONNECT for TLS, absolute URIs for plain HTTP), resolves
// every name itself and refuses IP literals and any name that resolves into a denied range;
// a tunnel's first message must name the tunnel's host (a TLS ClientHello's server_name, every
// request of plain HTTP). A tunnel to a destination for which the grant carries a sealed
// credential is terminated with a leaf of the toolgate egress CA and re-originated over TLS
// verified against the system roots (and --upstream-ca-file), the credential set as a header;
// a grant works only from the Pod address the operator bound it to. It records, per attempt, the destinations it allowed and refused
// (counts and names, never content) and serves them to the operator on a second listener, to
// the bearer of a token derived from the proxy key; the operator's collection at the
// attempt's end also ends the attempt's grant. It needs no Kubernetes API access
// (docs/egress.md, "Egress proxy").
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	// The image has no system roots (/egress-proxy alone): Mozilla's, via Go's maintained
	// bundle, are the roots a terminated tunnel's destination is verified against there.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/toolgate/toolgate/pkg/egress"
)

type options struct {
	listen, recordsListen, keyFile, hostsFile string
	caCertFile, caKeyFile, upstreamCAFile     string
	deny                                      []netip.Prefix
	rate                                      float64
	burst                                     int
	bindWait                                  time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "egress-proxy:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("egress-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var deny string
	fs.StringVar(&o.listen, "listen", ":3128", "address of the proxy listener (tool Pods)")
	fs.StringVar(&o.recordsListen, "records-listen", ":3129", "address of the records and health listener (the operator)")
	fs.StringVar(&o.keyFile, "key-file", "", "file holding the proxy key the operator signs grants with (required; at least 32 bytes)")
	fs.StringVar(&deny, "deny-cidrs", "", "comma-separated CIDRs no destination may resolve to, besides the built-in loopback, link-local, private, CGNAT, ULA and multicast ranges: the cluster's Pod, Service and node ranges")
	fs.Float64Var(&o.rate, "rate", egress.DefaultRatePerSecond, "requests (CONNECTs and plain-HTTP requests) each call attempt may make per second, on average, once its burst is spent; more are refused (429, RateLimited)")
	fs.IntVar(&o.burst, "burst", egress.DefaultBurst, "requests each call attempt may make at once before --rate applies")
	fs.StringVar(&o.caCertFile, "ca-cert-file", "", "the toolgate egress CA's certificate (PEM): with --ca-key-file, the proxy terminates tunnels to destinations with an injected credential; without, it refuses them (InjectionUnavailable)")
	fs.StringVar(&o.caKeyFile, "ca-key-file", "", "the toolgate egress CA's private key (PEM)")
	fs.StringVar(&o.upstreamCAFile, "upstream-ca-file", "", "extra roots (PEM) besides the system's that a terminated tunnel's destination may present a certificate from (a private CA)")
	fs.DurationVar(&o.bindWait, "bind-wait", 10*time.Second, "how long a request of a grant not yet bound to its Pod's address (the operator's POST …/pod) waits for the binding before it is refused (Unbound); 0: binding is not required")
	fs.StringVar(&o.hostsFile, "hosts-file", "", "TEST HOOK: a hosts file (address name...) answered before DNS, e.g. allowed.test for e2e; never in production")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.keyFile == "" {
		return o, errors.New("--key-file is required")
	}
	// 0 would refuse every request (or, as the Config's zero value, mean the default): neither
	// is a limit anyone means to set.
	if !(o.rate > 0) || math.IsInf(o.rate, 1) {
		return o, fmt.Errorf("--rate %v: want a positive number of requests per second", o.rate)
	}
	if o.burst < 1 {
		return o, fmt.Errorf("--burst %d: want at least 1 request", o.burst)
	}
	if (o.caCertFile == "") != (o.caKeyFile == "") {
		return o, errors.New("--ca-cert-file and --ca-key-file go together")
	}
	if o.bindWait < 0 {
		return o, fmt.Errorf("--bind-wait %s: want 0 (binding not required) or more", o.bindWait)
	}
	extra, err := egress.ParseDeny(deny)
	if err != nil {
		return o, err
	}
	o.deny = append(egress.DefaultDeny(), extra...)
	return o, nil
}

func run(args []string, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	key, err := os.ReadFile(o.keyFile)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	key = []byte(strings.TrimSpace(string(key)))
	var resolver egress.Resolver = net.DefaultResolver
	if o.hostsFile != "" {
		f, err := os.Open(o.hostsFile)
		if err != nil {
			return fmt.Errorf("hosts file: %w", err)
		}
		hosts, err := egress.ParseHosts(f)
		_ = f.Close()
		if err != nil {
			return err
		}
		log.Warn("test hook: answering names from a hosts file", "names", len(hosts))
		resolver = egress.StaticResolver{Hosts: hosts, Next: net.DefaultResolver}
	}
	ca, roots, err := loadTLS(o)
	if err != nil {
		return err
	}
	rec := egress.NewRecorder(time.Now)
	proxy, err := egress.NewProxy(egress.Config{Key: key, Resolver: resolver, Deny: o.deny, Now: time.Now, Recorder: rec, Log: log,
		RatePerSecond: o.rate, Burst: o.burst, CA: ca, UpstreamRoots: roots, BindWait: o.bindWait})
	if err != nil {
		return err
	}
	servers := []*http.Server{
		{Addr: o.listen, Handler: proxy, ReadHeaderTimeout: 10 * time.Second},
		{Addr: o.recordsListen, Handler: egress.NewRecordsHandler(key, rec), ReadHeaderTimeout: 10 * time.Second},
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() { errs <- s.ListenAndServe() }()
	}
	log.Info("serving", "proxy", o.listen, "records", o.recordsListen, "denyRanges", len(o.deny),
		"rate", o.rate, "burst", o.burst, "injection", ca != nil, "upstreamCA", o.upstreamCAFile != "", "bindWait", o.bindWait.String())
	select {
	case err = <-errs:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	return err
}

// loadTLS reads the toolgate egress CA (nil without --ca-cert-file) and the roots a
// terminated tunnel's destination is verified against: the system's, plus --upstream-ca-file.
func loadTLS(o options) (*egress.CA, *x509.CertPool, error) {
	var ca *egress.CA
	if o.caCertFile != "" {
		crt, err := os.ReadFile(o.caCertFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--ca-cert-file: %w", err)
		}
		key, err := os.ReadFile(o.caKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--ca-key-file: %w", err)
		}
		if ca, err = egress.LoadCA(crt, key, time.Now); err != nil {
			return nil, nil, err
		}
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, nil, fmt.Errorf("system roots: %w", err)
	}
	if o.upstreamCAFile != "" {
		pemBytes, err := os.ReadFile(o.upstreamCAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--upstream-ca-file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pemBytes) {
			return nil, nil, fmt.Errorf("--upstream-ca-file %s: no PEM certificate in it", o.upstreamCAFile)
		}
	}
	return ca, roots, nil
}
