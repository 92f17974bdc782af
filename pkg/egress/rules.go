// Package egress is the egress proxy's core and the contract between the proxy and the
// operator: the allow-list matching, the per-attempt grant the operator signs and the proxy
// verifies, the address ranges no destination may resolve to, and the per-attempt records
// of what the proxy let through or refused (counts and host names, never content).
//
// It imports no Kubernetes package: cmd/egress-proxy runs it with no API access at all.
package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// Rule allows one destination: Host is a DNS name, or "*." and a name for any name below
// it (at least one label more: "*.example.com" matches "a.example.com" and
// "a.b.example.com", never "example.com"); Port is a TCP port.
type Rule struct {
	Host string `json:"host"`
	Port int32  `json:"port"`
}

// maxHost is the longest DNS name (RFC 1035, without the trailing dot).
const maxHost = 253

// NormalizeHost lowercases a name and drops one trailing dot; ok is false for anything
// that is not a DNS name made of letters, digits, '-' and '_' (an IP literal, a name with
// a port, bytes a terminal would act on): such a host is never matched and is recorded as
// InvalidHost.
func NormalizeHost(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" || len(h) > maxHost {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return "", false
			}
		}
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return "", false
	}
	// A name whose last label is all digits is an IPv4 literal in one of the forms
	// inet_aton accepts ("2130706433", "127.1"): never a name.
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.Trim(last, "0123456789") == "" {
		return "", false
	}
	return h, true
}

// ValidateRule says what is wrong with a rule, or nil: the same checks the CRD makes, for
// the proxy's own defence (a grant is signed, but a rule it cannot match is a bug).
func ValidateRule(r Rule) error {
	name := strings.TrimPrefix(r.Host, "*.")
	if strings.Contains(name, "*") {
		return fmt.Errorf("host %q: a wildcard is allowed only as the whole leftmost label (*.example.com)", r.Host)
	}
	if n, ok := NormalizeHost(name); !ok || n != name {
		return fmt.Errorf("host %q: not a lowercase DNS name", r.Host)
	}
	if r.Port < 1 || r.Port > 65535 {
		return fmt.Errorf("host %q: port %d out of range 1-65535", r.Host, r.Port)
	}
	return nil
}

// Allowed reports whether a normalised host and port match one of the rules.
func Allowed(rules []Rule, host string, port int32) bool {
	for _, r := range rules {
		if r.Port != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(r.Host, "*"); ok {
			// suffix is ".example.com": the host needs a non-empty label before it.
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
			continue
		}
		if host == r.Host {
			return true
		}
	}
	return false
}
