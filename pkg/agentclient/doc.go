// Package agentclient is the client side of toolgate that the toolgate CLI and the MCP
// gateway share, and that agents written in Go can use directly: learn the caller's
// identity once (SelfSubjectReview), list the tools a scope sees, create a ToolCall that
// carries that identity, wait for it on a watch, and answer a call awaiting approval.
//
// It holds no state of its own: every answer comes from the Kubernetes API, and every
// write is checked there (RBAC, the identity admission policy, the CRD's validation).
package agentclient
