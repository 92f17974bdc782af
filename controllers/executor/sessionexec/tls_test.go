package sessionexec

import (
	"testing"
	"time"
)

// The operator's client certificate is issued again before it expires: a process that
// runs for days keeps reaching its session Pods.
func TestClientCertificateIsRenewed(t *testing.T) {
	start := time.Now()
	a, err := newAuthority(start)
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.clientCertificate(start)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := a.clientCertificate(start.Add(time.Hour))
	if same != first {
		t.Error("a fresh client certificate was issued again")
	}
	later := start.Add(certLifetime - time.Hour)
	renewed, err := a.clientCertificate(later)
	if err != nil {
		t.Fatal(err)
	}
	if renewed == first || !renewed.Leaf.NotAfter.After(later.Add(certRenew)) {
		t.Errorf("client certificate not renewed: valid until %s at %s", renewed.Leaf.NotAfter, later)
	}
	if a.caCert.NotAfter.Before(start.Add(365 * 24 * time.Hour)) {
		t.Errorf("the CA expires at %s, within the process's likely life", a.caCert.NotAfter)
	}
}
