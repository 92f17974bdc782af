package api_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("The example isolation manifests", Label("examples", "samples"), func() {
	It("(config/examples scope.yaml, tools.yaml, isolation.yaml and calls/isolation) pass validation and admission", func(ctx SpecContext) {
		root, err := tgt.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		dir := filepath.Join(root, "config", "examples")
		calls, err := filepath.Glob(filepath.Join(dir, "calls", "isolation", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(calls).To(HaveLen(4))
		files := append([]string{filepath.Join(dir, "scope.yaml"), filepath.Join(dir, "tools.yaml"),
			filepath.Join(dir, "isolation.yaml")}, calls...)
		ns := newNamespace(ctx)
		kinds := map[string]int{}
		tools := map[string]bool{}
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				u := &unstructured.Unstructured{}
				if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
					break
				} else {
					Expect(err).NotTo(HaveOccurred(), f)
				}
				kinds[u.GetKind()]++
				if u.GetKind() == "Tool" {
					name, ok, _ := unstructured.NestedString(u.Object, "spec", "name")
					if !ok {
						name = u.GetName()
					}
					tools[name] = true
				}
				u.SetNamespace(ns)
				Expect(sampleClient(u).Create(ctx, u, client.DryRunAll)).To(Succeed(), "%s: %s %s", f, u.GetKind(), u.GetName())
			}
		}
		Expect(kinds).To(Equal(map[string]int{"ToolScope": 1, "Tool": 11, "ToolCall": 4}))

		By("the scope demo allows every tool of tools.yaml and isolation.yaml")
		data, err := os.ReadFile(filepath.Join(dir, "scope.yaml"))
		Expect(err).NotTo(HaveOccurred())
		scope := &unstructured.Unstructured{}
		Expect(utilyaml.Unmarshal(data, &scope.Object)).To(Succeed())
		allow, _, _ := unstructured.NestedStringSlice(scope.Object, "spec", "allow")
		for name := range tools {
			Expect(allow).To(ContainElement(name))
		}
	})
})
