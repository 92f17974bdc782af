package netisolation

import (
	"os"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/google/go-cmp/cmp"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The operator writes the policies the chart and config/default/networkpolicy ship (make
// chart-test checks that those two agree with each other).
func TestToolNetworkPoliciesMatchShippedManifests(t *testing.T) {
	data, err := os.ReadFile("../../config/default/networkpolicy/tool-networkpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]networkingv1.NetworkPolicySpec{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var p networkingv1.NetworkPolicy
		if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
			t.Fatal(err)
		}
		shipped[p.Name] = p.Spec
	}
	built := ToolNetworkPolicies("agents", DefaultEgressExcept())
	if len(built) != len(shipped) {
		t.Fatalf("operator builds %d policies, config ships %d", len(built), len(shipped))
	}
	for _, p := range built {
		if p.Namespace != "agents" {
			t.Errorf("%s: namespace %q", p.Name, p.Namespace)
		}
		if d := cmp.Diff(p.Spec, shipped[p.Name]); d != "" {
			t.Errorf("%s differs from the shipped manifest (-operator +config):\n%s", p.Name, d)
		}
	}
}

func TestParseEgressExcept(t *testing.T) {
	cases := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"10.0.0.0/8, 192.0.2.7/32,,fe80::/10", []string{"10.0.0.0/8", "192.0.2.7/32", "fe80::/10"}, ""},
		{"192.0.2.7/24", []string{"192.0.2.0/24"}, ""},
		{"10.0.0.1", nil, "invalid CIDR"},
		{"0.0.0.0/0", nil, "whole address family"},
		{"::/0", nil, "whole address family"},
	}
	for _, tc := range cases {
		got, err := ParseEgressExcept(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || cmp.Diff(got, tc.want) != "" {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if _, err := ParseMode("enforce"); err == nil {
		t.Error("ParseNetworkPolicyMode accepted an unknown mode")
	}
}

// netpol is a policy named name selecting the tool Pods of network (all Pods: ""), with
// these policy types and that many empty ingress and egress rules.
func netpol(name string, network string, types []networkingv1.PolicyType, ingress, egress int) networkingv1.NetworkPolicy {
	p := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.NetworkPolicySpec{PolicyTypes: types}}
	if network != "" {
		p.Spec.PodSelector = ToolPodSelector(network)
	}
	for range ingress {
		p.Spec.Ingress = append(p.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
	}
	for range egress {
		p.Spec.Egress = append(p.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
	}
	return p
}

func TestIsolationGap(t *testing.T) {
	none, egress := toolgatev1alpha1.NetworkNone, toolgatev1alpha1.NetworkEgress
	podOf := func(n string) map[string]string {
		return map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: n, podcontract.LabelCall: "c"}
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	ingressOnly := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	ours := func() []networkingv1.NetworkPolicy {
		var out []networkingv1.NetworkPolicy
		for _, p := range ToolNetworkPolicies("ns", DefaultEgressExcept()) {
			out = append(out, *p)
		}
		return out
	}
	cases := []struct {
		name      string
		network   toolgatev1alpha1.NetworkMode
		policies  []networkingv1.NetworkPolicy
		ownedOnly bool   // ensure mode: only toolgate's egress-only policy may add egress
		wantGap   string // substring; "" means isolated
	}{
		{"none: toolgate's policies", none, ours(), true, ""},
		{"egress: toolgate's policies", egress, ours(), true, ""},
		{"none: no policy", none, nil, false, "isolates none Pods"},
		{"egress: no policy", egress, nil, true, "isolates egress Pods"},
		{"none: only the egress policy", none, ours()[1:], true, "isolates none Pods"},
		{"none: ingress isolation only", none, []networkingv1.NetworkPolicy{netpol("in", "none", ingressOnly, 0, 0)}, false, "for ingress and egress"},
		{"none: default types with no egress rule isolate ingress only", none, []networkingv1.NetworkPolicy{netpol("d", "none", nil, 0, 0)}, false, "for ingress and egress"},
		{"none: a platform's deny-all of every Pod", none, []networkingv1.NetworkPolicy{netpol("deny", "", both, 0, 0)}, false, ""},
		{"none: another policy allows egress", none, append(ours(), netpol("dns", "", []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, 0, 1)), true, "dns allows egress"},
		{"none: another policy allows ingress", none, append(ours(), netpol("web", "", nil, 1, 0)), true, "web allows ingress"},
		{"egress: another policy allows ingress", egress, append(ours(), netpol("web", "egress", nil, 1, 0)), true, "web allows ingress"},
		{"egress: another policy adds egress (ensure)", egress, append(ours(), netpol("all", "", both, 0, 1)), true, "all allows egress"},
		{"egress: a platform's own egress rules (require)", egress, []networkingv1.NetworkPolicy{netpol("p", "egress", both, 0, 2)}, false, ""},
		{"none: a policy selecting other Pods does not count", none, []networkingv1.NetworkPolicy{netpol("x", "egress", both, 0, 0)}, false, "isolates none Pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var owned []string
			if tc.ownedOnly {
				owned = []string{EgressOnlyPolicyName}
			}
			got := Gap(tc.network, podOf(podspec.NetworkLabel(tc.network)), tc.policies, owned)
			if tc.wantGap == "" && got != "" || tc.wantGap != "" && !strings.Contains(got, tc.wantGap) {
				t.Errorf("gap = %q, want %q", got, tc.wantGap)
			}
		})
	}
}
