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

package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// expectConsoleLinkServes follows an event's consoleURL as a person with the approver role
// would: there is no DNS here, so its host (the console Service's name) is replaced by the
// Service's cluster IP, and the request carries a token minted for the console's audience
// (what an authenticating proxy in front of it would set). The page is the call's.
func expectConsoleLinkServes(ctx context.Context, link string, call *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	u, err := url.Parse(link)
	Expect(err).NotTo(HaveOccurred())
	var svc corev1.Service
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-console"}, &svc)).To(Succeed())
	Expect(u.Hostname()).To(Equal(svc.Name+"."+svc.Namespace+".svc"), "the link names the console Service")
	u.Host = net.JoinHostPort(svc.Spec.ClusterIP, u.Port())

	token := approverToken(ctx, call.Name)
	hc := &http.Client{Timeout: 20 * time.Second}
	// The new RoleBinding reaches the API server's authorizer within moments: retry a 403.
	Eventually(func(g Gomega) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "%s", body)
		g.Expect(string(body)).To(ContainSubstring(call.Status.ArgumentsDigest))
		g.Expect(string(body)).To(ContainSubstring(call.Namespace + "/" + call.Name))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}
