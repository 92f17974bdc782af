package main

import (
	"encoding/pem"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/notify"
)

func TestNotifyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    *notify.DefaultSink
		console string
		err     string
	}{
		{args: nil},
		{args: []string{"--console-url=https://console.example/"}, console: "https://console.example/"},
		{args: []string{"--approval-sink-url=https://hooks.example/t", "--approval-sink-key-file=/k"},
			want: &notify.DefaultSink{URL: "https://hooks.example/t", KeyFile: "/k"}},
		{args: []string{"--approval-sink-url=http://bot.ops.svc:8080/", "--approval-sink-key-file=/k", "--approval-sink-events=Requested, Expired"},
			want: &notify.DefaultSink{URL: "http://bot.ops.svc:8080/", KeyFile: "/k",
				Events: []v1alpha1.ApprovalEvent{v1alpha1.ApprovalEventRequested, v1alpha1.ApprovalEventExpired}}},
		{args: []string{"--approval-sink-url=https://hooks.example/t"}, err: "needs --approval-sink-key-file"},
		{args: []string{"--approval-sink-url=http://hooks.example/t", "--approval-sink-key-file=/k"}, err: "want https://"},
		{args: []string{"--approval-sink-url=https://h.example/", "--approval-sink-key-file=/k", "--approval-sink-events=Ran"}, err: "unknown event"},
		{args: []string{"--approval-sink-key-file=/k"}, err: "need --approval-sink-url"},
		{args: []string{"--console-url=console.example"}, err: "absolute http(s) URL"},
		{args: []string{"--approval-sink-max-attempts=0"}, err: "at least 1"},
		{args: []string{"--approval-sink-allow-cidrs=10.0.0.0/33"}, err: "--approval-sink-allow-cidrs: \"10.0.0.0/33\" is neither a CIDR"},
		{args: []string{"--approval-sink-deny-cidrs=nodes.example"}, err: "--approval-sink-deny-cidrs: \"nodes.example\" is neither"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			f := bindNotify(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.options()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Default); diff != "" || got.ConsoleURL != tc.console {
				t.Fatalf("default sink (-want +got):\n%s\nconsole %q", diff, got.ConsoleURL)
			}
		})
	}
}

// --approval-sink-ca-file adds a private CA: the client it builds reaches a server whose
// certificate that CA signed; a file without a certificate is refused.
func TestNotifyAddressFlags(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f := bindNotify(fs)
	if err := fs.Parse([]string{"--approval-sink-allow-cidrs=172.18.0.2, 10.96.0.10/32", "--approval-sink-deny-cidrs=203.0.113.0/24"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	want := notify.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("172.18.0.2/32"), netip.MustParsePrefix("10.96.0.10/32")},
		Deny: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}
	if diff := cmp.Diff(want, o.Addresses, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Fatalf("addresses (-want +got):\n%s", diff)
	}
}

func TestNotifyCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(args ...string) (notify.Options, error) {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		f := bindNotify(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.options()
	}
	if _, err := parse("--approval-sink-ca-file=" + bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad CA file: %v", err)
	}
	if resp, err := (&http.Client{}).Get(srv.URL); err == nil {
		_ = resp.Body.Close()
		t.Fatal("the test server is trusted without its CA")
	}
	o, err := parse("--approval-sink-ca-file=" + good)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: o.TLSConfig}}).Get(srv.URL)
	if err != nil {
		t.Fatalf("with the CA file: %v", err)
	}
	_ = resp.Body.Close()
}
