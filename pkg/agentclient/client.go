package agentclient

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// Client talks to one namespace as one identity.
type Client struct {
	// C reads, writes and watches toolgate objects.
	C client.WithWatch
	// Namespace is where calls are created and tools resolved.
	Namespace string
	// Identity is the caller's username, written into spec.requester / spec.approver.
	Identity string
}

// New connects to the API server described by cfg and learns the caller's identity.
func New(ctx context.Context, cfg *rest.Config, namespace string) (*Client, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	who, err := WhoAmI(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Client{C: c, Namespace: namespace, Identity: who}, nil
}

// WhoAmI asks the API server who the caller is (a SelfSubjectReview, as `kubectl auth
// whoami` does). Calls and approvals must carry exactly this name: the identity admission
// policy rejects anything else.
func WhoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("learning who you are (SelfSubjectReview): %w", err)
	}
	if review.Status.UserInfo.Username == "" {
		return "", errors.New("the API server returned an empty username for this credential")
	}
	return review.Status.UserInfo.Username, nil
}

// Tools lists the tools a call of this client's identity in scope would resolve ("" is
// the namespace layer), sorted by name: none when the identity is not a subject of the
// scope (Catalog.NotASubject).
func (c *Client) Tools(ctx context.Context, scope string) (*catalog.Catalog, error) {
	return catalog.VisibleTools(ctx, c.C, c.Namespace, scope, c.Identity)
}

// Get reads one ToolCall.
func (c *Client) Get(ctx context.Context, name string) (*v1alpha1.ToolCall, error) {
	call := &v1alpha1.ToolCall{}
	err := c.C.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, call)
	return call, err
}

// Scheme holds client-go's built-in kinds and toolgate.dev/v1alpha1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}
