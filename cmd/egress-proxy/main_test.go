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
	if o.rate != egress.DefaultRatePerSecond || o.burst != egress.DefaultBurst {
		t.Errorf("rate %v, burst %d: want the defaults", o.rate, o.burst)
	}
	for _, args := range [][]string{{}, {"--key-file", "/k", "--deny-cidrs", "10.0.0.0/33"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) = nil error", strings.Join(args, " "))
		}
	}
}

func TestParseFlagsRate(t *testing.T) {
	o, err := parseFlags([]string{"--key-file", "/k", "--rate", "2.5", "--burst", "7"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.rate != 2.5 || o.burst != 7 {
		t.Errorf("rate %v, burst %d; want 2.5 and 7", o.rate, o.burst)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--rate", "-1", "--rate -1: want a positive number"},
		{"--rate", "0", "--rate 0: want a positive number"},
		{"--rate", "NaN", "--rate NaN: want a positive number"},
		{"--rate", "+Inf", "--rate +Inf: want a positive number"},
		{"--burst", "-3", "--burst -3: want at least 1"},
		{"--burst", "0", "--burst 0: want at least 1"},
		{"--burst", "1.5", "invalid value"},
	} {
		_, err := parseFlags([]string{"--key-file", "/k", tc.flag, tc.value}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want %q", tc.flag, tc.value, err, tc.want)
		}
	}
}
