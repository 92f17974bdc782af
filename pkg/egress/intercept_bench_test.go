package egress

import (
	"net/http"
	"testing"
)

// BenchmarkThroughProxy measures one HTTPS GET through the proxy to an upstream on
// loopback: through a plain tunnel (other.test) and through a tunnel the proxy terminates
// to inject a credential (api.test), each on a kept-alive connection and on a new
// connection per request (a new CONNECT, a new TLS handshake with the tool, and for
// injection a new one with the upstream).
func BenchmarkThroughProxy(b *testing.B) {
	// A bucket no benchmark empties: every new connection is a CONNECT and takes a token.
	f := newInjectFixture(b, true, func(c *Config) { c.RatePerSecond, c.Burst = 1e9, 1<<30 })
	for _, bc := range []struct {
		name      string
		host      string
		keepAlive bool
	}{
		{"tunnel/keepalive", "other.test", true},
		{"injected/keepalive", "api.test", true},
		{"tunnel/new-connection", "other.test", false},
		{"injected/new-connection", "api.test", false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := f.client(b, f.grant("bench-"+bc.name))
			c.Transport.(*http.Transport).DisableKeepAlives = !bc.keepAlive
			u := at(bc.host, f.goodPort) + "/"
			for b.Loop() {
				if status, _, _ := do(b, c, u); status != http.StatusOK {
					b.Fatalf("GET %s: %d", u, status)
				}
			}
		})
	}
}
