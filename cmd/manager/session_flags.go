package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/toolgate/toolgate/controllers/options"
)

// sessionFlags are the flags of session sandbox Pods (docs/session-sandboxes.md).
type sessionFlags struct {
	o              options.Session
	operatorLabels string
}

func bindSession(fs *flag.FlagSet) *sessionFlags {
	f := &sessionFlags{o: options.DefaultSession()}
	fs.DurationVar(&f.o.IdleTimeout, "session-idle-timeout", f.o.IdleTimeout, "how long a session sandbox Pod is kept after its last call ended when its ToolScope's sessionSandbox.idleTimeout says nothing")
	fs.DurationVar(&f.o.IdleCeiling, "session-idle-ceiling", f.o.IdleCeiling, "the longest any ToolScope may keep an idle session sandbox Pod")
	fs.IntVar(&f.o.MaxPerNamespace, "session-max-pods-per-namespace", f.o.MaxPerNamespace, "session sandbox Pods one namespace may hold; past it a session call runs in a Pod of its own (0: no cap)")
	fs.IntVar(&f.o.MaxPerRequester, "session-max-pods-per-requester", f.o.MaxPerRequester, "session sandbox Pods one requester may hold, all namespaces; past it a session call runs in a Pod of its own (0: no cap)")
	fs.StringVar(&f.o.OperatorNamespace, "session-operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's Pods, which alone the session Pods' NetworkPolicy lets reach their signers (default $POD_NAMESPACE; empty: any namespace)")
	fs.StringVar(&f.operatorLabels, "session-operator-labels", "app.kubernetes.io/name=toolgate,app.kubernetes.io/component=manager", "labels of the operator's Pods (k=v,...), which alone the session Pods' NetworkPolicy lets reach their signers")
	return f
}

// options checks and returns the session settings.
func (f *sessionFlags) options() (options.Session, error) {
	o := f.o
	set, err := labels.ConvertSelectorToLabelsMap(f.operatorLabels)
	if err != nil {
		return o, fmt.Errorf("--session-operator-labels: %w", err)
	}
	o.OperatorLabels = set
	switch {
	case o.IdleTimeout < 10*time.Second || o.IdleCeiling < 10*time.Second:
		return o, errors.New("--session-idle-timeout and --session-idle-ceiling must be at least 10s")
	case o.IdleTimeout > o.IdleCeiling:
		return o, fmt.Errorf("--session-idle-timeout %s is over --session-idle-ceiling %s", o.IdleTimeout, o.IdleCeiling)
	case o.MaxPerNamespace < 0 || o.MaxPerRequester < 0:
		return o, errors.New("--session-max-pods-per-namespace and --session-max-pods-per-requester must not be negative")
	}
	return o, nil
}
