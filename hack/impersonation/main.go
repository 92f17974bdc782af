// Command impersonation checks what a rendering of charts/toolgate lets its servers (the
// MCP gateway, the approval console) impersonate:
//
//	impersonation -want narrow rendered.yaml   # no ClusterRole may impersonate anyone
//	impersonation -want wide rendered.yaml     # some ClusterRole impersonates any user and group
//
// A rule is wide when a ClusterRole grants impersonate on core users, groups or
// serviceaccounts without resourceNames: whoever holds it may act as any user (any
// ServiceAccount), or carry any group (system:masters too), so its token is a
// cluster-admin credential. Narrow rules name their users and groups, and ServiceAccounts
// are granted per namespace by a Role. Exits 1 when the rendering is not what -want says.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	want := flag.String("want", "narrow", "narrow: no wide impersonate rule; wide: one granting users and groups")
	flag.Parse()
	if flag.NArg() != 1 || (*want != "narrow" && *want != "wide") {
		fmt.Fprintln(os.Stderr, "usage: impersonation -want narrow|wide rendered.yaml")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "impersonation:", err)
		os.Exit(2)
	}
	wide, err := wideRules(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "impersonation:", err)
		os.Exit(2)
	}
	if err := check(*want, wide); err != nil {
		fmt.Printf("impersonation: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	fmt.Printf("impersonation: %s is %s\n", flag.Arg(0), *want)
}

// check says whether the wide rules found are what want asks: none (narrow), or at least
// one that covers users and groups (wide: the switch still renders the rule it promises).
func check(want string, wide map[string][]string) error {
	if want == "narrow" {
		if len(wide) > 0 {
			return fmt.Errorf("ClusterRoles impersonate anyone: %v", wide)
		}
		return nil
	}
	for _, resources := range wide {
		if slices.Contains(resources, "users") && slices.Contains(resources, "groups") {
			return nil
		}
	}
	return fmt.Errorf("no ClusterRole impersonates any user and group (found %v)", wide)
}

var separator = regexp.MustCompile(`(?m)^---\s*$`)

// wideRules returns, per ClusterRole name, the core resources among users, groups and
// serviceaccounts it may impersonate without resourceNames.
func wideRules(r io.Reader) (map[string][]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for i, doc := range separator.Split(string(data), -1) {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, rule := range role.Rules {
			if len(rule.ResourceNames) > 0 || !anyOf(rule.Verbs, "impersonate") || !anyOf(rule.APIGroups, "") {
				continue
			}
			for _, res := range []string{"users", "groups", "serviceaccounts"} {
				if anyOf(rule.Resources, res) && !slices.Contains(out[role.Name], res) {
					out[role.Name] = append(out[role.Name], res)
				}
			}
		}
	}
	return out, nil
}

// anyOf reports whether list holds v or the wildcard "*".
func anyOf(list []string, v string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return s == v || strings.TrimSpace(s) == "*" })
}
