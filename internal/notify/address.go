package notify

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// AddressPolicy (notifyconfig.AddressPolicy) decides which addresses a scope's sink may be
// dialled at. A ToolScope writer chooses a sink's URL, so without it the operator would
// connect wherever they point it — the API server's Service IP, a kubelet's port, a cloud
// metadata address — and retry (a blind SSRF and a port scanner run by the operator). The
// check runs at connect time on the resolved address (net.Dialer's Control hook), so a name
// that resolves to an allowed address first and to a refused one later (DNS rebinding)
// gains nothing.

// BuiltinDeny are the ranges a scope's sink is never dialled at unless Allow names them:
// the local host, link-local and cloud metadata addresses, the private ranges where a
// cluster's Service, Pod and node addresses live in almost every cluster, and addresses
// that are not unicast destinations.
var BuiltinDeny = mustPrefixes(
	"0.0.0.0/8",      // "this network": 0.0.0.0 reaches the local host
	"10.0.0.0/8",     // private (RFC 1918)
	"100.64.0.0/10",  // shared address space: CGNAT, some Pod ranges, a cloud's metadata (100.100.100.200)
	"127.0.0.0/8",    // loopback
	"169.254.0.0/16", // link-local: cloud metadata (169.254.169.254)
	"172.16.0.0/12",  // private (RFC 1918)
	"192.0.0.0/24",   // IETF protocol assignments (a cloud's metadata at 192.0.0.192)
	"192.168.0.0/16", // private (RFC 1918)
	"198.18.0.0/15",  // benchmarking
	"224.0.0.0/4",    // multicast
	"240.0.0.0/4",    // reserved, broadcast
	"::/96",          // unspecified, loopback, IPv4-compatible
	"fc00::/7",       // unique local: IPv6's private range (a cloud's metadata at fd00:ec2::254)
	"fe80::/10",      // link-local
	"ff00::/8",       // multicast
)

// ErrAddressRefused is the cause of a dial the policy refused (the operator's log shows
// it; the call's event says only that the sink is unreachable).
var ErrAddressRefused = errors.New("address refused for approval sinks")

// nat64 and sixToFour carry an IPv4 address inside an IPv6 one; the IPv4 address is what a
// translator would connect to, so it is checked too.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// CheckAddress returns nil when p lets addr be dialled, else an error wrapping
// ErrAddressRefused that names the range refusing it.
func CheckAddress(p AddressPolicy, addr netip.Addr) error {
	addr = addr.WithZone("").Unmap() // a zoned address matches no prefix; ::ffff:a.b.c.d is a.b.c.d
	if !addr.IsValid() {
		return fmt.Errorf("%w: not an IP address", ErrAddressRefused)
	}
	if contains(p.Allow, addr) {
		return nil
	}
	for _, a := range candidates(addr) {
		if r, ok := match(BuiltinDeny, a); ok {
			return fmt.Errorf("%w: %s is in %s (built in; --approval-sink-allow-cidrs allows it)", ErrAddressRefused, addr, r)
		}
		if r, ok := match(p.Deny, a); ok {
			return fmt.Errorf("%w: %s is in %s (--approval-sink-deny-cidrs)", ErrAddressRefused, addr, r)
		}
	}
	return nil
}

// dialControl is p's net.Dialer Control hook: address is the resolved "ip:port" about to be
// connected to.
func dialControl(p AddressPolicy) func(_, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %q is not an IP address and port", ErrAddressRefused, address)
		}
		return CheckAddress(p, ap.Addr())
	}
}

// candidates are addr and the IPv4 address it carries, if any.
func candidates(addr netip.Addr) []netip.Addr {
	out := []netip.Addr{addr}
	b := addr.As16()
	switch {
	case !addr.Is6():
	case nat64.Contains(addr):
		out = append(out, netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(addr):
		out = append(out, netip.AddrFrom4([4]byte(b[2:6])))
	}
	return out
}

func contains(ps []netip.Prefix, a netip.Addr) bool {
	_, ok := match(ps, a)
	return ok
}

func match(ps []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range ps {
		if p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// ParsePrefixes reads comma-separated CIDRs or bare IP addresses (a single address).
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(a.Unmap(), p.Bits()-96) // what Check compares: the IPv4 address
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is neither a CIDR (10.96.0.0/12, fd00::/108) nor an IP address", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}
