// Package all is the one list of toolgate's features (feature.List), in the order they
// run, built from the reconciler's clients and settings. It is the only package that names
// each feature's package; the reconciler and the executors hold the List it returns.
package all

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/credentials"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/runtimeclass"
	"github.com/toolgate/toolgate/controllers/workspace"
)

// Deps are what the features are built from.
type Deps struct {
	Client    client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Clock     clock.PassiveClock
	// Recorder records the events features emit themselves (egressgrant.EventBindFailed).
	Recorder recorder.EventRecorder
	Options  options.Call
	// Deadline is when the operator ends a call's current attempt nobody reported on.
	Deadline func(call *v1alpha1.ToolCall) time.Time
}

// New is every feature, in feature.Names' order.
func New(d Deps) feature.List {
	return feature.List{
		runtimeclass.Feature{Options: d.Options.Job},
		credentials.Feature{},
		&egressgrant.Feature{Options: d.Options.EgressProxy, APIReader: d.APIReader, Clock: d.Clock, Deadline: d.Deadline,
			Binder: &egressgrant.Binder{Options: d.Options.EgressProxy, Recorder: d.Recorder}},
		workspace.Feature{Claims: &workspace.Claims{Client: d.Client, APIReader: d.APIReader, Scheme: d.Scheme, Clock: d.Clock,
			Options: d.Options.Workspace, Deadline: d.Deadline}},
	}
}

// specOnly is every feature as far as Uses goes: what a tool spec uses needs no client.
var specOnly = feature.List{runtimeclass.Feature{}, credentials.Feature{}, &egressgrant.Feature{}, workspace.Feature{}}

// Used is the set of features spec uses (its own runtimeClassName, not the operator's
// default: every executor supports a runtime class).
func Used(spec *v1alpha1.ToolSpec) feature.Set { return specOnly.Used(spec) }
