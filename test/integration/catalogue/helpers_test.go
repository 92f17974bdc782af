package catalogue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Builders the table's rows share.

func concat(groups ...[]row) []row {
	var out []row
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// nested is depth arrays, one inside the other, around 1.
func nested(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

// linked is a linked list of n objects {"next":{…}}.
func linked(n int) string {
	return strings.Repeat(`{"next":`, n) + "{}" + strings.Repeat("}", n)
}

// params sets the row Tool's parameters schema.
func params(schema map[string]any) func(*tg.ToolWrapper) {
	return func(w *tg.ToolWrapper) { w.Parameters(schema) }
}

// props is an object schema with these properties.
func props(p map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": p}
}

// textParams requires a string property "text".
func textParams(w *tg.ToolWrapper) {
	w.Parameters(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}},
		"required": []string{"text"}})
}

func timeout(d time.Duration) func(*tg.ToolWrapper) {
	return func(w *tg.ToolWrapper) { w.Timeout(d) }
}

// bigEnum is n distinct strings.
func bigEnum(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("value-%05d", i)
	}
	return out
}

// deepSchema is an object schema nested depth levels through properties "x".
func deepSchema(depth int) map[string]any {
	s := map[string]any{"type": "string"}
	for range depth {
		s = map[string]any{"type": "object", "properties": map[string]any{"x": s}}
	}
	return s
}

// policy is one policy of the stage with one rule (verdict v when expr holds).
func policy(stage v1alpha1.PolicyStage, expr string, v v1alpha1.Verdict) func(string) []client.Object {
	return func(ns string) []client.Object {
		return []client.Object{tg.MakeToolPolicy("p", ns).Stage(stage).VerdictRule("r", expr, v).Obj()}
	}
}

// scopes are ToolScopes {name, parent}.
func scopes(pairs ...[2]string) func(string) []client.Object {
	return func(ns string) []client.Object {
		out := make([]client.Object, 0, len(pairs))
		for _, p := range pairs {
			out = append(out, tg.MakeToolScope(p[0], ns).Parent(p[1]).Obj())
		}
		return out
	}
}

// manyTools is n more Tools in the namespace layer.
func manyTools(n int) func(string) []client.Object {
	return func(ns string) []client.Object {
		out := make([]client.Object, 0, n)
		for i := range n {
			out = append(out, tg.MakeTool(fmt.Sprintf("bulk-%04d", i), ns).Image("example/bulk:1").Command("/bulk").Obj())
		}
		return out
	}
}

// noContent checks that the result's content and error do not carry s.
func noContent(s string) func(Gomega, *v1alpha1.ToolCall) {
	return func(g Gomega, c *v1alpha1.ToolCall) {
		if c.Status.Result.Content != nil {
			g.Expect(string(c.Status.Result.Content.Raw)).NotTo(ContainSubstring(s))
		}
		g.Expect(c.Status.Result.Error).NotTo(ContainSubstring(s))
	}
}

// metaExit checks the exit code the runner vouched for.
func metaExit(code string) func(Gomega, *v1alpha1.ToolCall) {
	return func(g Gomega, c *v1alpha1.ToolCall) {
		g.Expect(c.Status.Result.Meta).To(HaveKeyWithValue("exitCode", code))
	}
}

// refServer is a local HTTP server a schema's remote $ref points at; it counts requests.
type refServer struct {
	*httptest.Server
	hits atomic.Int64
}

var remoteRef = sync.OnceValue(func() *refServer {
	s := &refServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	return s
})

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// expectDigestHolds recomputes the result's digest from the stored result: a result the
// API server changed on the way in (a number re-encoded) no longer matches its digest.
func expectDigestHolds(call *v1alpha1.ToolCall) {
	GinkgoHelper()
	digest, err := tg.StoredResultDigest(call)
	Expect(err).NotTo(HaveOccurred())
	Expect(digest).To(Equal(call.Status.ResultDigest), "the stored result is the one its digest was made of")
}

// registered checks the row's Tool's Registered condition (its message a regexp).
func registered(status metav1.ConditionStatus, reason, message string) func(Gomega, *v1alpha1.ToolCall) {
	return func(g Gomega, c *v1alpha1.ToolCall) {
		tool := &v1alpha1.Tool{}
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.Tool}, tool)).To(Succeed())
			g.Expect(tool).To(tg.HaveCondition(v1alpha1.ConditionRegistered, status, reason))
			g.Expect(meta.FindStatusCondition(tool.Status.Conditions, v1alpha1.ConditionRegistered).Message).To(MatchRegexp(message))
		}).Should(Succeed())
	}
}
