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
	"encoding/json"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("Printer columns", Label("printer"), func() {
	DescribeTable("are declared on the CRD",
		func(ctx SpecContext, crd string, columns []string) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: crd}, got)).To(Succeed())
			Expect(got.Spec.Versions).To(HaveLen(1))
			var names []string
			for _, c := range got.Spec.Versions[0].AdditionalPrinterColumns {
				names = append(names, c.Name)
			}
			Expect(names).To(Equal(columns))
		},
		Entry(nil, "tools.toolgate.dev", []string{"Tool", "Scope", "Registered", "Image", "Age"}),
		Entry(nil, "clustertools.toolgate.dev", []string{"Tool", "Registered", "Image", "Age"}),
		Entry(nil, "toolscopes.toolgate.dev", []string{"Parent", "Ready", "Age"}),
		Entry(nil, "toolpolicies.toolgate.dev", []string{"Stage", "Order", "Ready", "Age"}),
		Entry(nil, "toolcalls.toolgate.dev", []string{"Tool", "Phase", "Verdict", "Duration", "Requester", "Session", "Expires", "Age"}),
		Entry(nil, "toolcallapprovals.toolgate.dev", []string{"Decision", "Approver", "Consumed", "Age"}),
	)

	It("show a call's tool, phase, verdict and duration in the server-side table kubectl prints", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		tc := createCall(ctx, tgt.MakeToolCall("c", ns).Tool("grep"))
		Expect(writeStatus(ctx, tc, func(st *toolgatev1alpha1.ToolCallStatus) {
			st.Phase, st.Verdict, st.Duration = toolgatev1alpha1.PhaseFailed, toolgatev1alpha1.VerdictAllow, "2.9s"
			st.Result = tgt.ErrorResult(toolgatev1alpha1.ReasonNonZeroExit, "exit status 2")
			st.ResultDigest = tgt.Digest(mustJSON(st.Result))
		})).To(Succeed())

		table := getTable(ctx, "/apis/toolgate.dev/v1alpha1/namespaces/"+ns+"/toolcalls")
		cells := map[string]any{}
		Expect(table.Rows).To(HaveLen(1))
		for i, col := range table.ColumnDefinitions {
			cells[col.Name] = table.Rows[0].Cells[i]
		}
		Expect(cells).To(HaveKeyWithValue("Name", "c"))
		Expect(cells).To(HaveKeyWithValue("Tool", "grep"))
		Expect(cells).To(HaveKeyWithValue("Phase", "Failed"))
		Expect(cells).To(HaveKeyWithValue("Verdict", "Allow"))
		Expect(cells).To(HaveKeyWithValue("Duration", "2.9s"))
		Expect(cells).To(HaveKeyWithValue("Requester", tgt.AdminUser))
	})

	It("answer to the short name tc and the category toolgate", func(ctx SpecContext) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "toolcalls.toolgate.dev"}, crd)).To(Succeed())
		Expect(crd.Status.AcceptedNames.ShortNames).To(ConsistOf("tc"))
		Expect(crd.Status.AcceptedNames.Categories).To(ConsistOf("toolgate"))
	})
})

// getTable GETs path as the admin, asking for the meta.k8s.io Table kubectl get prints.
func getTable(ctx SpecContext, path string) *metav1.Table {
	hc, err := rest.HTTPClientFor(env.Config)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	table := &metav1.Table{}
	Expect(json.Unmarshal(body, table)).To(Succeed())
	return table
}
