package agentclient

import "regexp"

// traceparentRE is a W3C Trace Context traceparent: version, trace ID, parent span ID, flags.
var traceparentRE = regexp.MustCompile(`^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

// ValidTraceparent returns v, trimmed, when it is a traceparent header value the operator
// can join (version 00, non-zero IDs), else "". A caller's malformed trace context is
// dropped, never an error: tracing must not fail a call.
func ValidTraceparent(v string) string {
	if len(v) > 64 {
		return ""
	}
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	if !traceparentRE.MatchString(v) || v[:2] != "00" ||
		v[3:35] == "00000000000000000000000000000000" || v[36:52] == "0000000000000000" {
		return ""
	}
	return v
}
