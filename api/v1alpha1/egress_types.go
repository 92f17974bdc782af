package v1alpha1

// Egress lets a tool body reach named hosts, and only those, through toolgate's egress
// proxy. A Tool with egress.allow must set sandbox.network: Egress; its Pod then reaches
// nothing but the proxy (NetworkPolicy), gets HTTPS_PROXY and HTTP_PROXY, and the proxy
// lets through only the listed names (resolving them itself, refusing IP literals and any
// name that resolves into the cluster's or other denied ranges). network: Egress without
// egress.allow keeps its meaning: anything outside the cluster's ranges, no proxy.
// +kubebuilder:validation:XValidation:rule="self.allow.filter(r, has(r.credential)).size() <= 8",message="at most 8 allow entries may carry a credential"
type Egress struct {
	// allow lists the destinations: a host name (or "*." and a name for any name below it)
	// and a TCP port, and optionally a credential the proxy adds to its requests (at most 8
	// entries with one). Required; 1 to 32 entries, each host and port pair once.
	// +required
	// +listType=map
	// +listMapKey=host
	// +listMapKey=port
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Allow []EgressRule `json:"allow"`
}

// EgressRule is one allowed destination.
// +kubebuilder:validation:XValidation:rule="!self.host.matches('(^|[.])[0-9]+$')",message="host must be a DNS name, not an IP address: the egress proxy refuses IP literals"
// +kubebuilder:validation:XValidation:rule="!has(self.credential) || !self.host.startsWith('*.')",message="a credential needs an exact host, not a wildcard: the proxy would send it to every name below the domain, including names someone else controls"
type EgressRule struct {
	// host is a lowercase DNS name ("api.example.com"), or "*." and a name
	// ("*.example.com": any name with at least one more label, never example.com itself).
	// A wildcard is allowed only as the whole leftmost label. Required; at most 253 characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?([a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?$`
	Host string `json:"host"`

	// port is the TCP port. Required; 1 to 65535.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// credential is a Secret value the egress proxy adds to every request the body sends to
	// this host and port, so that the body never holds it: the proxy terminates the body's
	// TLS with the toolgate egress CA (which the body's trust store gets), sets the header and
	// re-originates the request to the real host, verified against the system roots. Only
	// on an exact host (CEL). Optional.
	// +optional
	Credential *EgressCredential `json:"credential,omitempty"`
}

// EgressCredential is a header the egress proxy sets on the body's requests to one host.
// +kubebuilder:validation:XValidation:rule="!(self.header.lowerAscii() in ['host', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length', 'expect', 'http2-settings'])",message="header must not be a hop-by-hop or framing header (Host, Connection, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Content-Length, Expect, HTTP2-Settings): the proxy would change how the request is routed or framed"
// +kubebuilder:validation:XValidation:rule="!self.header.lowerAscii().startsWith('proxy-')",message="header must not be a Proxy-* header: those are between the body and the proxy, never sent on"
type EgressCredential struct {
	// secretKeyRef names the Secret and key, in the call's namespace (for a ClusterTool
	// too), whose value (trimmed of surrounding white space) goes into the header. The
	// operator reads it when it starts each attempt; it is never written into the Pod, the
	// call or a log. Whoever creates or changes the Tool must be allowed to get that Secret
	// (toolgate-credentials). Required.
	// +required
	SecretKeyRef CredentialKeySelector `json:"secretKeyRef"`

	// header is the request header the proxy sets, replacing any the body sent: an HTTP
	// field name (letters, digits and !#$%&'*+-.^_|~), neither hop-by-hop, framing nor
	// Proxy-* (CEL). Default Authorization; at most 64 characters.
	// +optional
	// +kubebuilder:default=Authorization
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Header string `json:"header,omitempty"`

	// scheme precedes the value in the header, with one space: "Bearer" gives
	// "Authorization: Bearer <value>"; "token" is GitHub's; "Basic" takes a value that is
	// already base64 of user:password. Empty: the value alone (an API key header). At most
	// 32 characters of the same set as header.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!#$%&'*+.^_|~-]+$`
	Scheme string `json:"scheme,omitempty"`
}

// EgressLog is what the egress proxy saw of one attempt, read by the operator when the
// attempt ended: destinations and counts, never content.
type EgressLog struct {
	// destinations are the hosts the body asked for, sorted by host and port. At most 32.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Destinations []EgressDestination `json:"destinations,omitempty"`

	// omitted counts requests to destinations beyond the 32 listed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Omitted int32 `json:"omitted,omitempty"`

	// unavailable says why the proxy's records could not be read (the proxy unreachable,
	// or not configured; destinations is then empty), or that the proxy restarted during
	// the attempt (what it saw before is lost).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Unavailable string `json:"unavailable,omitempty"`
}

// EgressDestination counts an attempt's requests to one host and port.
type EgressDestination struct {
	// host is the name asked for, an IP literal the proxy refused, or "(invalid)".
	// +required
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host"`

	// port is the TCP port asked for (0 when the request named none the proxy understood).
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// allowed counts the connections (CONNECT) and plain-HTTP requests let through.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Allowed int32 `json:"allowed,omitempty"`

	// refused counts the ones refused; a tunnel let through and then closed for its
	// first message (SNIMismatch, HostMismatch, FirstMessageTimeout, BadRequest) counts
	// in both.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Refused int32 `json:"refused,omitempty"`

	// reason is the last refusal's reason: NotAllowed, IPLiteral, InvalidHost,
	// DeniedRange, Unresolved, BadRequest, TooManyTunnels, RateLimited, DialFailed,
	// SNIMismatch, HostMismatch, FirstMessageTimeout, GrantEnded, WrongPod, Unbound,
	// InjectionUnavailable, InjectionNeedsTLS or UpstreamUntrusted.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Reason string `json:"reason,omitempty"`
}
