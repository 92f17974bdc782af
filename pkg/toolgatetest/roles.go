package toolgatetest

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/toolgate/toolgate/config/rbac"
)

// UserRole is one of the ClusterRoles toolgate ships (config/rbac): its users' and the
// operator's own.
type UserRole string

const (
	// AgentRole is toolgate-agent: make, read and cancel calls; read tools.
	AgentRole UserRole = "toolgate-agent"
	// ApproverRole is toolgate-approver: read calls and tools; answer calls.
	ApproverRole UserRole = "toolgate-approver"
	// OperatorRole is toolgate-manager, the operator's own ClusterRole: for specs that act
	// as the operator's ServiceAccount would (its metadata writes, say).
	OperatorRole UserRole = "toolgate-manager"
)

// ClusterRole returns the shipped ClusterRole, as config/rbac has it.
func (r UserRole) ClusterRole() (*rbacv1.ClusterRole, error) {
	data := map[UserRole][]byte{AgentRole: rbac.AgentRole, ApproverRole: rbac.ApproverRole, OperatorRole: rbac.ManagerRole}[r]
	if data == nil {
		return nil, fmt.Errorf("no shipped role %q", r)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return nil, fmt.Errorf("config/rbac role %s: %w", r, err)
	}
	return role, nil
}

// BindUserRole applies the shipped ClusterRole (once) and binds it to user in namespace
// only, with a RoleBinding — as a platform team would — and returns a client acting as
// user. A namespace binding cannot grant the cluster-scoped ClusterTools: such a user does
// not see them in listings (the operator still resolves them for its calls).
func (e *Env) BindUserRole(ctx context.Context, namespace string, role UserRole, user string) (client.Client, error) {
	cr, err := role.ClusterRole()
	if err != nil {
		return nil, err
	}
	if err := e.Client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + cr.Name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return e.AddUser(user, nil)
}
