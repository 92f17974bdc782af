package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/notify"
)

// notifyFlags are the approval notification settings: the operator-wide default sink and
// the console link.
type notifyFlags struct {
	url, keyFile, events, console string
	attempts                      int
}

func bindNotify(fs *flag.FlagSet) *notifyFlags {
	f := &notifyFlags{}
	fs.StringVar(&f.url, "approval-sink-url", "", "default approval sink: every call that asks for approval, in every namespace, is announced there as a signed CloudEvent (https://, or http:// to a cluster Service); empty: none")
	fs.StringVar(&f.keyFile, "approval-sink-key-file", "", "file holding the default sink's HMAC-SHA256 key (a mounted Secret; re-read for every delivery); required with --approval-sink-url")
	fs.StringVar(&f.events, "approval-sink-events", "", "comma-separated events the default sink receives (Requested, Approved, Denied, Expired); empty: all")
	fs.StringVar(&f.console, "console-url", "", "base URL of the approval console: events link to <url>/calls/<namespace>/<name>; empty: no link")
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
