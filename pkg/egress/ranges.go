package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
)

// DefaultDeny are the ranges no destination may resolve to: loopback, link-local (cloud
// metadata), RFC 1918, CGNAT, IPv6 ULA, and the unspecified and multicast addresses. A
// cluster whose Pod, Service or node addresses lie elsewhere adds them (--deny-cidrs).
func DefaultDeny() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// ParseDeny parses a comma-separated CIDR list.
func ParseDeny(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("deny CIDR %q: %w", f, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Denied reports whether an address lies in one of the ranges. An IPv4-mapped IPv6
// address (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
func Denied(deny []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range deny {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolver looks a name up; the proxy resolves every name itself (the Pod never does) and
// dials the address it checked, so a name cannot resolve to one address for the check and
// another for the connection (DNS rebinding).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// StaticResolver answers from a fixed table first and falls back to Next (nil: none). It
// is a test hook (--hosts-file): e2e maps allowed.test and other.test to its listener.
type StaticResolver struct {
	Hosts map[string][]netip.Addr
	Next  Resolver
}

// LookupNetIP implements Resolver.
func (s StaticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := s.Hosts[host]; ok {
		return a, nil
	}
	if s.Next == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return s.Next.LookupNetIP(ctx, network, host)
}

// ParseHosts reads a hosts file ("address name [name...]" lines, '#' comments) into a
// table for StaticResolver; names are normalised as NormalizeHost does.
func ParseHosts(r io.Reader) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || len(f) < 2 {
			return nil, fmt.Errorf("hosts line %d: want an address and at least one name", line)
		}
		for _, name := range f[1:] {
			n, ok := NormalizeHost(name)
			if !ok {
				return nil, fmt.Errorf("hosts line %d: %q is not a DNS name", line, name)
			}
			out[n] = append(out[n], a)
		}
	}
	return out, sc.Err()
}
