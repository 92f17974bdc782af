package api_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("Session workspace validation", Label("workspace", "validation"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("defaults a scope's declaration: 1Gi, ReadWriteOnce, kept 1h", func(ctx SpecContext) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": toolgatev1alpha1.GroupVersion.String(), "kind": "ToolScope",
			"spec": map[string]any{"workspace": map[string]any{}},
		}}
		u.SetName("coding")
		u.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		ws, _, _ := unstructured.NestedMap(u.Object, "spec", "workspace")
		Expect(ws).To(Equal(map[string]any{"size": "1Gi", "accessMode": "ReadWriteOnce", "retention": "1h"}))
		scope := &toolgatev1alpha1.ToolScope{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "coding"}, scope)).To(Succeed())
		Expect(scope.Spec.Workspace.StorageClassName).To(BeNil(), "the operator's --workspace-storage-class applies")
	})

	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ToolWrapper) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		},
		Entry("a ReadWrite tool (a barrier)", tgt.MakeTool("t", "").Workspace(toolgatev1alpha1.WorkspaceReadWrite)),
		Entry("a ReadOnly tool", tgt.MakeTool("t", "").Workspace(toolgatev1alpha1.WorkspaceReadOnly)),
		Entry("a concurrency-safe ReadOnly tool", tgt.MakeTool("t", "").Workspace(toolgatev1alpha1.WorkspaceReadOnly).ConcurrencySafe(true)),
		Entry("a warm ReadWrite tool (its calls run cold)", tgt.MakeTool("t", "").Workspace(toolgatev1alpha1.WorkspaceReadWrite).WarmPool(1, time.Minute)),
	)

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolWrapper, substrings ...string) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("a concurrency-safe ReadWrite tool", tgt.MakeTool("t", "").Workspace(toolgatev1alpha1.WorkspaceReadWrite).ConcurrencySafe(true),
			"a tool with sandbox.workspace ReadWrite is a barrier in its session: concurrencySafe must be false"),
		Entry("an access of an unknown kind", tgt.MakeTool("t", "").Workspace("Exclusive"), "spec.sandbox.workspace", "Unsupported value"),
	)

	DescribeTable("rejects a scope's declaration",
		func(ctx SpecContext, w *tgt.ToolScopeWrapper, substrings ...string) {
			s := w.Obj()
			s.Namespace = ns
			Expect(k8sClient.Create(ctx, s)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("a retention of 5s", tgt.MakeToolScope("s", "").Workspace("1Gi", 5*time.Second), "retention must be between 10s and 720h"),
		Entry("a retention of 31 days", tgt.MakeToolScope("s", "").Workspace("1Gi", 744*time.Hour), "retention must be between 10s and 720h"),
		Entry("a size of 0", tgt.MakeToolScope("s", "").Workspace("0", time.Minute), "size must be positive and at most 1Ti"),
		Entry("a size of 2Ti", tgt.MakeToolScope("s", "").Workspace("2Ti", time.Minute), "size must be positive and at most 1Ti"),
		Entry("a storage class that is no name", tgt.MakeToolScope("s", "").Workspace("1Gi", time.Minute).WorkspaceStorageClass("Fast SSD"),
			"spec.workspace.storageClassName", "should match"),
	)

	It("rejects an access mode of an unknown kind", func(ctx SpecContext) {
		s := tgt.MakeToolScope("s", ns).Workspace("1Gi", time.Minute).Obj()
		s.Spec.Workspace.AccessMode = "ReadOnlyMany"
		Expect(k8sClient.Create(ctx, s)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.workspace.accessMode", "Unsupported value"))
	})
})

var _ = Describe("The example workspace manifests", Label("workspace", "samples"), func() {
	It("(config/examples/workspace.yaml and the session demo's calls) pass validation and admission", func(ctx SpecContext) {
		root, err := tgt.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		files, err := filepath.Glob(filepath.Join(root, "config", "examples", "calls", "session", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(7))
		files = append([]string{filepath.Join(root, "config", "examples", "workspace.yaml")}, files...)
		ns := newNamespace(ctx)
		kinds := map[string]int{}
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
				u.SetNamespace(ns)
				Expect(sampleClient(u).Create(ctx, u, client.DryRunAll)).To(Succeed(), f)
			}
		}
		Expect(kinds).To(Equal(map[string]int{"ToolScope": 1, "Tool": 6, "ToolCall": 7}))
	})
})
