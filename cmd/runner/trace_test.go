package main

import (
	"testing"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestTraceparentReachesTheBody: the TRACEPARENT of the runner's environment is the body's.
func TestTraceparentReachesTheBody(t *testing.T) {
	in := newInvocation(t, sh(`printf '%s' "$TRACEPARENT"`)...)
	in.env[podcontract.EnvTraceparent] = testTraceparent
	o := in.run()
	if o.code != 0 || o.frame.Stdout != testTraceparent {
		t.Fatalf("exit %d, the body saw TRACEPARENT %q", o.code, o.frame.Stdout)
	}
}
