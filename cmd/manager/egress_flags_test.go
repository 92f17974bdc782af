package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEgressFlags(t *testing.T) {
	key := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) error {
		fs := flag.NewFlagSet("m", flag.ContinueOnError)
		f := bindEgressProxy(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		o, err := f.options()
		if err == nil && f.url != "" && (len(o.Key) != 32 || o.PodLabels["app.kubernetes.io/name"] == "") {
			t.Errorf("options %+v: key or labels not read", o)
		}
		return err
	}
	if err := parse(); err != nil {
		t.Errorf("no proxy: %v", err)
	}
	if err := parse("--egress-proxy-url", "http://10.0.0.50:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "toolgate-system", "--egress-proxy-peer-cidrs", "192.0.2.2/32"); err != nil {
		t.Errorf("ClusterIP proxy: %v", err)
	}
	for _, bad := range [][]string{
		{"--egress-proxy-url", "http://p:3128"}, // no key
		{"--egress-proxy-url", "https://p:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "n"},
		{"--egress-proxy-url", "http://p:3128", "--egress-proxy-key-file", key}, // no namespace
		{"--egress-proxy-url", "http://p:3128", "--egress-proxy-key-file", key, "--egress-proxy-namespace", "n", "--egress-proxy-peer-cidrs", "nope"},
	} {
		if err := parse(bad...); err == nil {
			t.Errorf("flags %q: no error", bad)
		}
	}
}
