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
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gs "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/approvalevents"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The chart's console Service as the local values link to it (approvalNotifications.consoleURL
// in charts/toolgate/ci/local-values.yaml).
const localConsoleURL = "http://" + release + "-console." + systemNS + ".svc:8091"

// Approval notifications on the real cluster: the deployed operator (leader) POSTs signed
// CloudEvents to an HTTPS receiver on this machine, by name through cluster DNS (a headless
// Service whose endpoint is the node address; a certificate for that name from the local sink
// CA, which make up's chart install trusts) — named by a ToolScope's
// approvalSinks with its HMAC key in a Secret. A second sink of the scope refuses every
// connection: the call is announced, approved and runs all the same.
var _ = Describe("approval notifications reach a sink", Label("approval", "notify"), func() {
	It("delivers the signed requested and approved events of a call to an HTTPS receiver; a sink that is down changes nothing", func(ctx SpecContext) {
		expectSinkCATrusted(ctx)
		nodeIP := nodeAddress()
		expectSinkAddressAllowed(ctx, nodeIP)
		key := make([]byte, 32)
		_, err := rand.Read(key)
		Expect(err).NotTo(HaveOccurred())
		key = []byte(hex.EncodeToString(key)) // as `openssl rand -hex 32` makes it
		name := "e2e-notify-" + utilrand.String(5)
		// The operator reaches the receiver by its Service's name: cluster DNS (CoreDNS,
		// hack/cluster) answers for a headless Service whose endpoint is this machine.
		host := name + "." + demoNS + ".svc"
		sink := startSinkReceiver(nodeIP, key, host)
		_, port, err := net.SplitHostPort(sink.Listener.Addr().String())
		Expect(err).NotTo(HaveOccurred())
		createHostService(ctx, name, nodeIP, port)

		createSinkSecret(ctx, name, key)
		scope := toolgatetest.MakeToolScope(name, demoNS).Parent(demoScope).
			ApprovalSink("receiver", "https://"+net.JoinHostPort(host, port)+"/toolgate", name).
			ApprovalSink("down", "https://"+refusingAddress(nodeIP)+"/toolgate", name).Obj()
		createSinkScope(ctx, scope)

		By("a call that asks for approval parks, and the receiver gets its requested event")
		command := "echo announced to a sink: ping"
		created := time.Now().Add(-time.Second).Truncate(time.Second)
		parked := waitParked(ctx, createCall(ctx, "sh", scope.Name, map[string]any{"command": command}))
		subject := demoNS + "/" + parked.Name
		requested := waitSinkEvent(ctx, sink, subject, approvalevents.TypeRequested)
		expectRequestedEvent(requested, parked, scope.Name, "$ "+command, created)
		By("the event's console link opens the call's page in the deployed console")
		expectConsoleLinkServes(ctx, requested.event.Data.ConsoleURL, parked)

		By("the signature holds only for the receiver's key, and only inside the replay window")
		other := approvalevents.Verifier{Keys: [][]byte{[]byte("not the sink's key")}}
		_, err = verifySinkRequest(other, requested)
		Expect(err).To(MatchError(approvalevents.ErrSignature))
		later := approvalevents.Verifier{Keys: [][]byte{key}, Now: func() time.Time { return time.Now().Add(10 * time.Minute) }}
		_, err = verifySinkRequest(later, requested)
		Expect(err).To(MatchError(approvalevents.ErrTimestamp))

		By("the approver approves; the receiver gets the approved event and the call succeeds")
		Expect(approver.Create(ctx, toolgatetest.MakeToolCallApproval(parked.Name, demoNS).For(parked).
			Approver("approver").Reason("e2e: announced and approved").Obj())).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, toolgatetest.MakeToolCallApproval(parked.Name, demoNS).Obj()))).To(Succeed())
		})
		approved := waitSinkEvent(ctx, sink, subject, approvalevents.TypeApproved)
		expectApprovedEvent(approved, parked)
		done := waitTerminal(ctx, parked, callTimeout)
		Expect(done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(done.Status.Result.Content).NotTo(BeNil())
		Expect(string(done.Status.Result.Content.Raw)).To(ContainSubstring("announced to a sink"))

		By("every request to the receiver verified, and none was of another event of this call")
		for _, got := range sink.requests() {
			Expect(got.err).NotTo(HaveOccurred())
			Expect(got.event.Event.Type()).To(BeElementOf(approvalevents.TypeRequested, approvalevents.TypeApproved))
		}
	}, SpecTimeout(4*time.Minute))
})

// createHostService names a listener on this machine in cluster DNS: a headless Service
// without a selector, whose EndpointSlice holds the node address and port.
func createHostService(ctx context.Context, name, nodeIP, port string) {
	GinkgoHelper()
	p, err := strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{e2eLabel: "true"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(p), Protocol: corev1.ProtocolTCP}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: map[string]string{
			e2eLabel: "true", discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "toolgate-e2e"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{nodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(p)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, obj := range []client.Object{svc, slice} {
		Expect(admin.Create(ctx, obj)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) })
	}
}

// expectSinkCATrusted checks that the installed operator trusts the local sink CA: the
// chart's ConfigMap holds the same certificate as the file this suite signs with.
func expectSinkCATrusted(ctx context.Context) {
	GinkgoHelper()
	crtFile, _ := sinkCAFiles()
	want, err := os.ReadFile(crtFile)
	Expect(err).NotTo(HaveOccurred(), "the local sink CA (make up creates it, hack/cluster/pki.sh)")
	var cm corev1.ConfigMap
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release + "-approval-sink-ca"}, &cm)).To(Succeed(),
		"the chart's approval sink CA (make up installs it with --set-file approvalNotifications.caBundle)")
	Expect(strings.TrimSpace(cm.Data["ca.crt"])).To(Equal(strings.TrimSpace(string(want))),
		"the operator trusts another sink CA than %s: run make up again", crtFile)
}

// expectSinkAddressAllowed checks that the installed operator may dial scopes' sinks at
// the node address, where this suite's receiver listens: a private address, refused unless
// the chart's approvalNotifications.allowCIDRs names it (make up sets it to <node-ip>/32).
func expectSinkAddressAllowed(ctx context.Context, nodeIP string) {
	GinkgoHelper()
	var d appsv1.Deployment
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release}, &d)).To(Succeed())
	var args []string
	for _, c := range d.Spec.Template.Spec.Containers {
		args = append(args, c.Args...)
	}
	Expect(args).To(ContainElement("--approval-sink-allow-cidrs="+nodeIP+"/32"),
		"the operator may not dial sinks at the node address %s: run make up again (hack/up.sh sets approvalNotifications.allowCIDRs)", nodeIP)
}

// createSinkSecret creates the sink's HMAC key Secret in the demo namespace (the local
// values let the operator read Secrets there: approvalNotifications.secretNamespaces), of
// the type that opts a Secret in as a sink key.
func createSinkSecret(ctx context.Context, name string, key []byte) {
	GinkgoHelper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: map[string]string{e2eLabel: "true"}},
		Type:       toolgatev1alpha1.SecretTypeApprovalSinkKey,
		Data:       map[string][]byte{toolgatev1alpha1.DefaultSecretKey: bytes.Clone(key)},
	}
	Expect(admin.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
}

// createSinkScope creates the spec's own scope below demo (so that only its calls go to its
// sinks) and waits until it is Ready: the operator's cache then holds its sinks.
func createSinkScope(ctx context.Context, scope *toolgatev1alpha1.ToolScope) {
	GinkgoHelper()
	metav1.SetMetaDataLabel(&scope.ObjectMeta, e2eLabel, "true")
	Expect(admin.Create(ctx, scope)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, scope))).To(Succeed()) })
	Eventually(func(g Gomega) {
		var s toolgatev1alpha1.ToolScope
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(scope), &s)).To(Succeed())
		g.Expect(s).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionReady, metav1.ConditionTrue, ""))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// waitSinkEvent waits until the receiver verified an event of eventType for subject and
// returns the first.
func waitSinkEvent(ctx context.Context, sink *sinkReceiver, subject, eventType string) sinkRequest {
	GinkgoHelper()
	var got []sinkRequest
	Eventually(func(g Gomega) {
		got = sink.eventsFor(g, subject, eventType)
		g.Expect(got).NotTo(BeEmpty(), "no %s event for %s yet", eventType, subject)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	return got[0]
}

// expectRequestedEvent checks the CloudEvent attributes and what a person needs to decide.
func expectRequestedEvent(got sinkRequest, parked *toolgatev1alpha1.ToolCall, scope, card string, notBefore time.Time) {
	GinkgoHelper()
	Expect(got.header.Get("Content-Type")).To(Equal(approvalevents.ContentType))
	Expect(got.header.Get(approvalevents.HeaderAttempt)).NotTo(BeEmpty())
	e := got.event.Event
	Expect(e.SpecVersion()).To(Equal("1.0"))
	Expect(e.ID()).To(Equal(approvalevents.ID(string(parked.UID), approvalevents.TypeRequested)))
	Expect(e.Source()).To(Equal(approvalevents.Source(demoNS)))
	Expect(e.Subject()).To(Equal(demoNS + "/" + parked.Name))
	Expect(e.DataContentType()).To(Equal("application/json"))
	Expect(e.Time()).To(BeTemporally(">=", notBefore))
	Expect(e.Time()).To(BeTemporally("<=", time.Now()))
	Expect(parked.Status.ApprovalDeadline).NotTo(BeNil())
	Expect(got.event.Data).To(gs.MatchAllFields(gs.Fields{
		"Namespace": Equal(demoNS), "Name": Equal(parked.Name), "UID": Equal(string(parked.UID)),
		"Tool": Equal("sh"), "ToolKind": Equal("Tool"), "Scope": Equal(scope), "Requester": Equal("agent"),
		"Card":             Equal(card),
		"ArgumentsDigest":  Equal(parked.Status.ArgumentsDigest),
		"Message":          ContainSubstring("This command may use the network; a person must approve it."),
		"ApprovalDeadline": BeTemporally("==", parked.Status.ApprovalDeadline.Time),
		"ApproveCommand":   Equal("toolgate approve " + parked.Name + " -n " + demoNS),
		"DenyCommand":      Equal("toolgate deny " + parked.Name + " -n " + demoNS),
		"ConsoleURL":       Equal(localConsoleURL + "/calls/" + demoNS + "/" + parked.Name),
		"Decision":         BeEmpty(), "Approver": BeEmpty(), "Reason": BeEmpty(), "DecidedAt": BeNil(),
	}))
}

// expectApprovedEvent checks the decision event: the same call and card, who answered.
func expectApprovedEvent(got sinkRequest, parked *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	e := got.event.Event
	Expect(e.ID()).To(Equal(approvalevents.ID(string(parked.UID), approvalevents.TypeApproved)))
	Expect(e.Subject()).To(Equal(demoNS + "/" + parked.Name))
	d := got.event.Data
	Expect(d.UID).To(Equal(string(parked.UID)))
	Expect(d.ArgumentsDigest).To(Equal(parked.Status.ArgumentsDigest))
	Expect(d.Card).To(HavePrefix("$ "))
	Expect(d.Decision).To(Equal(string(toolgatev1alpha1.ApprovalEventApproved)))
	Expect(d.Approver).To(Equal("approver"))
	Expect(d.Reason).To(Equal(toolgatev1alpha1.ReasonApproved))
	Expect(d.DecidedAt).NotTo(BeNil())
	Expect(*d.DecidedAt).To(BeTemporally("~", e.Time(), time.Second))
}
