/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package api_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("Samples", Label("samples"), func() {
	It("are all listed in config/samples/kustomization.yaml and pass validation and admission", func(ctx SpecContext) {
		root, err := tgt.ModuleRoot()
		Expect(err).NotTo(HaveOccurred())
		dir := filepath.Join(root, "config", "samples")
		var kustomization struct {
			Resources []string `json:"resources"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(utilyaml.Unmarshal(data, &kustomization)).To(Succeed())
		files, err := filepath.Glob(filepath.Join(dir, "toolgate_*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(kustomization.Resources).To(ConsistOf(baseNames(files)))

		ns := newNamespace(ctx)
		kinds := map[string]bool{}
		for _, name := range kustomization.Resources {
			data, err := os.ReadFile(filepath.Join(dir, name))
			Expect(err).NotTo(HaveOccurred())
			u := &unstructured.Unstructured{}
			Expect(utilyaml.Unmarshal(data, &u.Object)).To(Succeed(), name)
			kinds[u.GetKind()] = true
			if u.GetKind() != "ClusterTool" {
				u.SetNamespace(ns)
			}
			Expect(sampleClient(u).Create(ctx, u, client.DryRunAll)).To(Succeed(), name)
		}
		Expect(kinds).To(HaveLen(6))
	})
})

// sampleClient acts as the user the sample names as requester or approver (the identity
// policy requires it), else as the admin.
func sampleClient(u *unstructured.Unstructured) client.Client {
	for _, field := range []string{"requester", "approver"} {
		if user, ok, _ := unstructured.NestedString(u.Object, "spec", field); ok {
			c, err := env.AddUser(user, []string{tgt.EditorsGroup})
			Expect(err).NotTo(HaveOccurred())
			return c
		}
	}
	return k8sClient
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
