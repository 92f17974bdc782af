package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/notify"
)

// notifyFlags are the approval notification settings: the operator-wide default sink and
// the console link.
type notifyFlags struct {
	url, keyFile, events, console, caFile string
	allowCIDRs, denyCIDRs                 string
	attempts                              int
}

func bindNotify(fs *flag.FlagSet) *notifyFlags {
	f := &notifyFlags{}
	fs.StringVar(&f.url, "approval-sink-url", "", "default approval sink: every call that asks for approval, in every namespace, is announced there as a signed CloudEvent (https://, or http:// to a cluster Service); empty: none")
	fs.StringVar(&f.keyFile, "approval-sink-key-file", "", "file holding the default sink's HMAC-SHA256 key (a mounted Secret; re-read for every delivery); required with --approval-sink-url")
	fs.StringVar(&f.events, "approval-sink-events", "", "comma-separated events the default sink receives (Requested, Approved, Denied, Expired); empty: all")
	fs.StringVar(&f.console, "console-url", "", "base URL of the approval console: events link to <url>/calls/<namespace>/<name>; empty: no link")
	fs.StringVar(&f.caFile, "approval-sink-ca-file", "", "PEM file of CA certificates trusted for https sinks, besides the system's (sinks behind a private CA)")
	fs.StringVar(&f.allowCIDRs, "approval-sink-allow-cidrs", "", "comma-separated CIDRs or addresses that scopes' sinks may be dialled at although a built-in range (loopback, link-local and metadata, private, multicast) or --approval-sink-deny-cidrs holds them: an in-cluster sink Service's IP, a receiver on a node address")
	fs.StringVar(&f.denyCIDRs, "approval-sink-deny-cidrs", "", "comma-separated CIDRs or addresses that scopes' sinks are never dialled at, besides the built-in ranges: the cluster's Service and Pod ranges and node addresses where they are public")
	fs.IntVar(&f.attempts, "approval-sink-max-attempts", notify.DefaultOptions().MaxAttempts, "attempts per event and sink (exponential backoff from 1s, at most 2m apart) before the delivery is given up")
	return f
}

// options checks the flags and returns the notifier's settings.
func (f *notifyFlags) options() (notify.Options, error) {
	o := notify.DefaultOptions()
	if f.attempts < 1 {
		return o, fmt.Errorf("--approval-sink-max-attempts %d: want at least 1", f.attempts)
	}
	o.MaxAttempts = f.attempts
	var err error
	if o.Addresses.Allow, err = notify.ParsePrefixes(f.allowCIDRs); err != nil {
		return o, fmt.Errorf("--approval-sink-allow-cidrs: %w", err)
	}
	if o.Addresses.Deny, err = notify.ParsePrefixes(f.denyCIDRs); err != nil {
		return o, fmt.Errorf("--approval-sink-deny-cidrs: %w", err)
	}
	if f.caFile != "" {
		if o.TLSConfig, err = tlsTrusting(f.caFile); err != nil {
			return o, err
		}
	}
	if f.console != "" {
		if u, err := url.Parse(f.console); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return o, fmt.Errorf("--console-url %q: want an absolute http(s) URL", f.console)
		}
		o.ConsoleURL = f.console
	}
	if f.url == "" {
		if f.keyFile != "" || f.events != "" {
			return o, errors.New("--approval-sink-key-file and --approval-sink-events need --approval-sink-url")
		}
		return o, nil
	}
	if err := notify.CheckURL(f.url); err != nil {
		return o, err
	}
	if f.keyFile == "" {
		return o, errors.New("--approval-sink-url needs --approval-sink-key-file: events are always signed")
	}
	sink := &notify.DefaultSink{URL: f.url, KeyFile: f.keyFile}
	for e := range strings.SplitSeq(f.events, ",") {
		switch ev := v1alpha1.ApprovalEvent(strings.TrimSpace(e)); ev {
		case "":
		case v1alpha1.ApprovalEventRequested, v1alpha1.ApprovalEventApproved, v1alpha1.ApprovalEventDenied, v1alpha1.ApprovalEventExpired:
			sink.Events = append(sink.Events, ev)
		default:
			return o, fmt.Errorf("--approval-sink-events: unknown event %q (want Requested, Approved, Denied, Expired)", ev)
		}
	}
	o.Default = sink
	return o, nil
}

// tlsTrusting returns a TLS client configuration that trusts the system's roots and the
// PEM certificates of caFile.
func tlsTrusting(caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--approval-sink-ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--approval-sink-ca-file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
