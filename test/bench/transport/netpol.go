package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
)

// operatorSource is the address the Pods see the bench's connections come from (the host's
// address on the cluster bridge): the stand-in for the operator Pod's address.
func operatorSource(ip string) (string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	h, _, err := net.SplitHostPort(c.LocalAddr().String())
	return h, err
}

// standinPod is the operator's stand-in Pod of -pod-client.
const standinPod = "operator-standin"

// ensureNetworkPolicy lets only the operator in: ingress to the responder Pods on 8080 and
// 8443 from src/32 (the bench host) and the stand-in Pod (in toolgate, the operator's Pods by
// namespace and label selector), nothing else.
func ensureNetworkPolicy(ctx context.Context, cs kubernetes.Interface, ns, src string) error {
	tcp := corev1.ProtocolTCP
	port := func(p int) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(int32(p)))}
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "session-runner-ingress", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: benchLabel, Operator: metav1.LabelSelectorOpExists}}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{IPBlock: &networkingv1.IPBlock{CIDR: src + "/32"}},
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{benchLabel: "operator"}}},
				},
				Ports: []networkingv1.NetworkPolicyPort{port(8080), port(8443)},
			}},
		},
	}
	_, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{})
	return err
}

// dialFrom execs `/responder dial addr` in pod: what a Pod (or a body in it) can reach.
func (b *bench) dialFrom(ctx context.Context, pod, addr string) string {
	return b.run(ctx, pod, "/responder", "dial", addr)
}

// run execs cmd in pod's container and returns its output (and error).
func (b *bench) run(ctx context.Context, pod string, cmd ...string) string {
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.o.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "runner", Command: cmd, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(b.cfg, "GET", req.URL().String())
	if err != nil {
		return err.Error()
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	s := strings.TrimSpace(out.String() + " " + errOut.String())
	if err != nil {
		s += fmt.Sprintf(" (%v)", err)
	}
	return s
}

// reachability prints who reaches each responder's listener: the host (the operator's
// stand-in), another Pod, and the Pod itself over loopback (a body in the same Pod would).
func (b *bench) reachability(ctx context.Context, targets []*target) {
	fmt.Println("\nreachability of the listener (:8080):")
	for _, t := range targets {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(t.ip, "8080"), 2*time.Second)
		host := "reached"
		if err != nil {
			host = err.Error()
		} else {
			_ = c.Close()
		}
		fmt.Printf("  host -> %s: %s\n", t.pod, host)
		fmt.Printf("  %s -> itself via 127.0.0.1: %s\n", t.pod, b.dialFrom(ctx, t.pod, "127.0.0.1:8080"))
		for _, o := range targets {
			if o != t {
				fmt.Printf("  %s -> %s (%s): %s\n", o.pod, t.pod, t.ip, b.dialFrom(ctx, o.pod, net.JoinHostPort(t.ip, "8080")))
			}
		}
	}
}
