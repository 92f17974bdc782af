// Package tokenauth is what toolgate's HTTP servers (the MCP gateway, the approval console)
// share to serve each client as itself: a bearer token reviewed by the API server for one
// audience (TokenReview, cached briefly), the Identity it names, a rest.Config that
// impersonates that identity, and a TLS key pair re-read when its files change.
package tokenauth
