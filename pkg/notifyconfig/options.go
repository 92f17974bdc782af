// Package notifyconfig holds the settings of the operator's approval notifications (the
// CloudEvents internal/notify sends to approval sinks), in a package a team outside this
// module can import: controllers.Options.Notify and the test kit's ManagerOptions.Notify
// are of its type. internal/notify aliases these types, so a new setting is one field here.
package notifyconfig

import (
	"crypto/tls"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// Options configure the notifier. A zero field takes its value from DefaultOptions.
type Options struct {
	// Default is the operator-wide sink every call that asks is sent to; nil: none.
	Default *DefaultSink
	// ConsoleURL is the approval console's base URL; a call's link is
	// <ConsoleURL>/calls/<namespace>/<name>. Empty: events carry no link.
	ConsoleURL string
	// Workers deliver at once (each holds at most one request in flight).
	Workers int
	// MaxAttempts bounds the attempts per event and sink (the first included).
	MaxAttempts int
	// BaseDelay and MaxDelay bound the exponential backoff between attempts.
	BaseDelay, MaxDelay time.Duration
	// Timeout bounds one attempt (connection, request, answer).
	Timeout time.Duration
	// MaxPending bounds the deliveries waiting in memory; past it new ones are dropped.
	MaxPending int
	// TLSConfig is the TLS client configuration of every sink connection (RootCAs: sinks
	// behind a private CA); nil: the system's roots.
	TLSConfig *tls.Config
	// Addresses are where scopes' sinks may be dialled (the default sink, set by the
	// operator's own flags, is not checked).
	Addresses AddressPolicy
}

// AddressPolicy decides which addresses a scope's sink may be dialled at, besides the
// ranges internal/notify always refuses (loopback, link-local, metadata, private, …).
type AddressPolicy struct {
	// Deny are refused besides the built-in ranges: the cluster's Service and Pod ranges
	// and node addresses where they are not private addresses.
	Deny []netip.Prefix
	// Allow are dialled even when a built-in or Deny range holds them (an in-cluster sink
	// Service, a receiver on a node address).
	Allow []netip.Prefix
}

// DefaultSink is the operator's own sink, given by flags (a chart value): its key is read
// from a file (a mounted Secret), so the operator needs no RBAC for it.
type DefaultSink struct {
	URL     string
	KeyFile string
	// Events it receives; empty: all.
	Events []v1alpha1.ApprovalEvent
}

// DefaultOptions are the settings of a notifier given none.
func DefaultOptions() Options {
	return Options{Workers: 4, MaxAttempts: 8, BaseDelay: time.Second, MaxDelay: 2 * time.Minute,
		Timeout: 10 * time.Second, MaxPending: 10000}
}
