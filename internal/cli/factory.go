package cli

import (
	"context"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/toolgate/toolgate/pkg/agentclient"
)

// Factory is what every command shares: the streams, and the kubectl-style connection flags
// (--kubeconfig, --context, -n/--namespace, --as …) turned into a rest.Config, a namespace
// and clients. It connects lazily and learns the caller's identity once per process.
type Factory struct {
	// IO are the command's streams: In for prompts, Out for results, ErrOut for progress
	// and errors.
	IO genericiooptions.IOStreams
	// Flags are the kubeconfig flags, bound to the root command's persistent flags.
	Flags *genericclioptions.ConfigFlags

	agent *agentclient.Client
}

// NewFactory returns a Factory reading the kubeconfig as kubectl does.
func NewFactory(streams genericiooptions.IOStreams) *Factory {
	return &Factory{IO: streams, Flags: genericclioptions.NewConfigFlags(true)}
}

// RESTConfig is the connection the flags and the kubeconfig describe.
func (f *Factory) RESTConfig() (*rest.Config, error) {
	cfg, err := f.Flags.ToRESTConfig()
	if err != nil {
		return nil, Exit(ExitFailure, fmt.Errorf("reading the kubeconfig: %w", err))
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "toolgate/" + Version
	return cfg, nil
}

// Namespace is -n/--namespace, else the kubeconfig context's namespace, else "default".
func (f *Factory) Namespace() (string, error) {
	ns, _, err := f.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", Exit(ExitFailure, fmt.Errorf("reading the kubeconfig: %w", err))
	}
	return ns, nil
}

// AgentClient connects to the namespace and learns who the caller is (SelfSubjectReview),
// once: every call and approval the commands write carries that identity.
func (f *Factory) AgentClient(ctx context.Context) (*agentclient.Client, error) {
	if f.agent != nil {
		return f.agent, nil
	}
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	c, err := agentclient.New(ctx, cfg, ns)
	if err != nil {
		return nil, explain(err, apiOp{verb: "create", resource: "selfsubjectreviews.authentication.k8s.io"})
	}
	f.agent = c
	return c, nil
}

// Kubernetes is a clientset for the built-in kinds (Pods, Jobs, Events, Pod logs).
func (f *Factory) Kubernetes() (kubernetes.Interface, error) {
	cfg, err := f.RESTConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
