package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
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
	attempts                              int
}

func bindNotify(fs *flag.FlagSet) *notifyFlags {
	f := &notifyFlags{}
	fs.StringVar(&f.url, "approval-sink-url", "", "default approval sink: every call that asks for approval, in every namespace, is announced there as a signed CloudEvent (https://, or http:// to a cluster Service); empty: none")
	fs.StringVar(&f.keyFile, "approval-sink-key-file", "", "file holding the default sink's HMAC-SHA256 key (a mounted Secret; re-read for every delivery); required with --approval-sink-url")
	fs.StringVar(&f.events, "approval-sink-events", "", "comma-separated events the default sink receives (Requested, Approved, Denied, Expired); empty: all")
	fs.StringVar(&f.console, "console-url", "", "base URL of the approval console: events link to <url>/calls/<namespace>/<name>; empty: no link")
	fs.StringVar(&f.caFile, "approval-sink-ca-file", "", "PEM file of CA certificates trusted for https sinks, besides the system's (sinks behind a private CA)")
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
	if f.caFile != "" {
		hc, err := clientTrusting(f.caFile)
		if err != nil {
			return o, err
		}
		o.HTTPClient = hc
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

// clientTrusting returns an HTTP client that trusts the system's roots and the PEM
// certificates of caFile.
func clientTrusting(caFile string) (*http.Client, error) {
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
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t}, nil
}
