package main

import (
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pkg/egress"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--key-file", "/k", "--deny-cidrs", "10.244.0.0/16, 192.0.2.2/32"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.deny) != len(egress.DefaultDeny())+2 || !egress.Denied(o.deny, netip.MustParseAddr("192.0.2.2")) {
		t.Errorf("deny ranges %v: want the defaults and both extras", o.deny)
	}
	for _, args := range [][]string{{}, {"--key-file", "/k", "--deny-cidrs", "10.0.0.0/33"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) = nil error", strings.Join(args, " "))
		}
	}
}
