package serving

import (
	"crypto/tls"
	"slices"
	"testing"
)

// The endpoint is HTTPS behind authentication and authorisation unless told otherwise, and
// speaks HTTP/1.1 only unless HTTP/2 is enabled (the envtest suite proves the filter's answers).
func TestOptions(t *testing.T) {
	cases := []struct {
		name              string
		bindAddress       string
		secure, http2     bool
		wantFilter        bool
		wantHTTP11Only    bool
		wantSecureServing bool
	}{
		{name: "default", bindAddress: ":8443", secure: true, wantFilter: true, wantHTTP11Only: true, wantSecureServing: true},
		{name: "HTTP/2 allowed", bindAddress: ":8443", secure: true, http2: true, wantFilter: true, wantSecureServing: true},
		{name: "plain HTTP, explicitly", bindAddress: ":8080", secure: false, wantHTTP11Only: true},
		{name: "disabled", bindAddress: "0", secure: true, wantFilter: true, wantHTTP11Only: true, wantSecureServing: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Options(tc.bindAddress, tc.secure, tc.http2, "/certs")
			if o.BindAddress != tc.bindAddress || o.CertDir != "/certs" {
				t.Errorf("bind address %q, cert dir %q", o.BindAddress, o.CertDir)
			}
			if o.SecureServing != tc.wantSecureServing {
				t.Errorf("SecureServing = %v, want %v", o.SecureServing, tc.wantSecureServing)
			}
			if (o.FilterProvider != nil) != tc.wantFilter {
				t.Errorf("authentication filter set = %v, want %v", o.FilterProvider != nil, tc.wantFilter)
			}
			cfg := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
			for _, opt := range o.TLSOpts {
				opt(cfg)
			}
			if got := !slices.Contains(cfg.NextProtos, "h2"); got != tc.wantHTTP11Only {
				t.Errorf("NextProtos %v: HTTP/1.1 only = %v, want %v", cfg.NextProtos, got, tc.wantHTTP11Only)
			}
		})
	}
}
