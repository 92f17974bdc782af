package toolgatetest

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/netisolation"
)

// The kit's CallOptions are the shipped settings with only the fields a spec set changed:
// the zero value runs the operator as StartManager always did (controllers.DefaultCallOptions).
func TestCallOptionsChangeOnlyWhatIsSet(t *testing.T) {
	key, labels := []byte(strings.Repeat("k", 32)), map[string]string{"app": "proxy"}
	cases := map[string]struct {
		in     CallOptions
		change func(*controllers.CallOptions)
	}{
		"zero":          {CallOptions{}, func(*controllers.CallOptions) {}},
		"job retention": {CallOptions{JobRetention: 2 * time.Second}, func(c *controllers.CallOptions) { c.JobRetention = 2 * time.Second }},
		"network policy": {CallOptions{NetworkPolicy: "require"},
			func(c *controllers.CallOptions) { c.NetworkPolicy.Mode = netisolation.Require }},
		"history": {CallOptions{HistorySucceeded: 2, HistoryFailed: 1},
			func(c *controllers.CallOptions) { c.Retention.HistorySucceeded, c.Retention.HistoryFailed = 2, 1 }},
		"audit content": {CallOptions{AuditIncludeContent: true}, func(c *controllers.CallOptions) { c.Retention.AuditIncludeContent = true }},
		"egress proxy": {CallOptions{EgressProxy: EgressProxy{URL: "http://10.0.0.12:3128", RecordsURL: "http://r", Key: key,
			CA: []byte("ca"), Namespace: "ns", PodLabels: labels, PeerCIDRs: []string{"10.0.0.12/32"}}},
			func(c *controllers.CallOptions) {
				c.EgressProxy = egressgrant.ProxyOptions{URL: "http://10.0.0.12:3128", RecordsURL: "http://r", Key: key,
					CA: []byte("ca"), Namespace: "ns", PodLabels: labels, PeerCIDRs: []string{"10.0.0.12/32"}}
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := controllers.DefaultCallOptions()
			tc.change(&want)
			got, err := tc.in.operator()
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("operator() = %+v, want %+v", got, want)
			}
		})
	}
	if _, err := (CallOptions{NetworkPolicy: "sometimes"}).operator(); err == nil {
		t.Error("an unknown network policy mode was accepted")
	}
}
