package executortest

import (
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/feature/all"
)

// Features are every feature as far as a Pod's ending goes (ClassifyPod needs no client).
var Features feature.List = all.New(all.Deps{})

// WithFeatures is env with every feature, built from env's clients and settings as the
// reconciler builds them.
func WithFeatures(env execenv.Env) execenv.Env {
	env.Features = all.New(all.Deps{Client: env.Client, APIReader: env.APIReader, Scheme: env.Scheme, Clock: env.Clock,
		Recorder: env.Recorder, Options: env.Options, Deadline: env.AttemptDeadline})
	return env
}
