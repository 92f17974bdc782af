package toolgatetest

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The session wire keeps the transport's one promise the operator relies on: a zero
// handover time only when the Kubelet surely did not take the line.
func TestSessionClientHandoverTimes(t *testing.T) {
	k := NewKubelet(fake.NewClientBuilder().WithScheme(NewScheme()).Build())
	base, stop, err := ServeLogs(k)
	if err != nil {
		t.Fatal(err)
	}
	c := SessionClient{Base: base}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "toolgate-session-x", UID: "u1"}}
	at, reply, err := c.Call(context.Background(), pod, []byte("{}\n"))
	if err == nil || !strings.Contains(err.Error(), "not found") || !at.IsZero() || reply != nil {
		t.Errorf("a Pod that is not there: handed over %v, reply %q, err %v; want zero, nil, not found", at, reply, err)
	}
	if len(k.SessionHandovers()) != 0 {
		t.Errorf("handovers recorded: %+v", k.SessionHandovers())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	at, _, err = c.Call(context.Background(), pod, []byte("{}\n"))
	if err == nil || at.IsZero() {
		t.Errorf("the server gone: handed over %v, err %v; want an error with a handover time (unknown counts as handed over)", at, err)
	}
}
