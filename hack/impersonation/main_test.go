package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Wide rules are ClusterRole rules that impersonate core users, groups or serviceaccounts
// (or "*") without resourceNames; named users and groups, Roles and other API groups'
// resources (uids, userextras) are not.
func TestWideRules(t *testing.T) {
	got, err := wideRules(strings.NewReader(`
# comment
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: wide}
rules:
- apiGroups: [""]
  resources: [users, groups, serviceaccounts]
  verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: narrow}
rules:
- apiGroups: [""]
  resources: [users]
  verbs: [impersonate]
  resourceNames: [alice]
- apiGroups: [""]
  resources: [groups]
  verbs: [impersonate]
  resourceNames: [system:authenticated]
- apiGroups: [authentication.k8s.io]
  resources: [uids, userextras/pod-name]
  verbs: [impersonate]
- apiGroups: [""]
  resources: [pods]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: star}
rules:
- apiGroups: ["*"]
  resources: [groups]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sa-only, namespace: agents}
rules:
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [impersonate]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: x}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"wide": {"users", "groups", "serviceaccounts"}, "star": {"groups"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wide rules (-want +got):\n%s", diff)
	}
	if err := check("narrow", got); err == nil {
		t.Error("narrow accepted wide rules")
	}
	if err := check("wide", got); err != nil {
		t.Errorf("wide: %v", err)
	}
	if err := check("wide", map[string][]string{"star": {"groups"}}); err == nil {
		t.Error("wide accepted a rule without users")
	}
	if err := check("narrow", map[string][]string{}); err != nil {
		t.Errorf("narrow: %v", err)
	}
}
