package console

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// maxNamespaces bounds the namespaces tried one by one when the user may not list calls
// across namespaces.
const maxNamespaces = 100

// visible is where the user's calls were listed: every namespace (All) or Namespaces.
type visible struct {
	All        bool
	Namespaces []string
	Note       string
}

// Where says it for the page.
func (v visible) Where() string {
	if v.All {
		return "all namespaces"
	}
	return "namespace " + strings.Join(v.Namespaces, ", ")
}

// listCalls lists the calls the user may see: in Options.Namespace when set; else across
// namespaces; else, when the user may not, in each namespace it may list calls in (when it
// may list namespaces); else in its own namespace.
func (s *Server) listCalls(ctx context.Context, u *user) ([]v1alpha1.ToolCall, visible, error) {
	if ns := s.opts.Namespace; ns != "" {
		calls, err := listIn(ctx, u, ns)
		return calls, visible{Namespaces: []string{ns}}, err
	}
	calls, err := listIn(ctx, u, "")
	if err == nil {
		return calls, visible{All: true}, nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, visible{}, err
	}
	namespaces, err := u.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: maxNamespaces})
	if err != nil {
		home := u.ac.Namespace
		calls, err := listIn(ctx, u, home)
		return calls, visible{Namespaces: []string{home}, Note: fmt.Sprintf(
			"you may list calls neither across namespaces nor namespaces: showing namespace %s (choose one with -n)", home)}, err
	}
	v := visible{}
	var all []v1alpha1.ToolCall
	for _, ns := range namespaces.Items {
		calls, err := listIn(ctx, u, ns.Name)
		switch {
		case apierrors.IsForbidden(err):
			continue
		case err != nil:
			return nil, v, err
		}
		v.Namespaces = append(v.Namespaces, ns.Name)
		all = append(all, calls...)
	}
	if len(v.Namespaces) == 0 {
		v.Note = "you may not list calls in any namespace"
	}
	return all, v, nil
}

func listIn(ctx context.Context, u *user, ns string) ([]v1alpha1.ToolCall, error) {
	list := &v1alpha1.ToolCallList{}
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := u.ac.C.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// awaiting keeps the calls awaiting approval, the nearest deadline first.
func awaiting(calls []v1alpha1.ToolCall) []v1alpha1.ToolCall {
	out := slices.DeleteFunc(slices.Clone(calls), func(c v1alpha1.ToolCall) bool {
		return c.Status.Phase != v1alpha1.PhaseAwaitingApproval
	})
	slices.SortStableFunc(out, func(a, b v1alpha1.ToolCall) int {
		switch da, db := a.Status.ApprovalDeadline, b.Status.ApprovalDeadline; {
		case da != nil && db != nil && !da.Equal(db):
			return da.Compare(db.Time)
		case da == nil && db != nil:
			return 1
		case da != nil && db == nil:
			return -1
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}
