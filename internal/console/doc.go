// Package console is toolgate's approval console: a small web server whose pages show the
// calls awaiting approval as cards (the Tool's presentation, arguments, digest, requester
// and a deadline countdown) with Approve / Deny buttons that write the ToolCallApproval as
// the signed-in user, and a page per call (its stages as a timeline, the result card,
// attempts, Pods and events). Pages are server-rendered html/template with one small
// script that follows a Server-Sent Events stream fed by a watch and refreshes the page's
// live part when the calls change.
//
// Two ways to sign in (Options.Auth):
//   - Kubeconfig (`toolgate console`, as `kubectl proxy` runs): the console acts as the
//     kubeconfig's identity and listens on loopback; the browser signs in once with the
//     secret link the command prints, which sets a session cookie.
//   - Token (deployed): every browser session carries a bearer token the API server
//     accepts for the audience (TokenReview, as the MCP gateway does, internal/tokenauth)
//     and the console acts as that identity (impersonation); the token comes in an
//     Authorization header (behind an authenticating proxy) or is pasted once into the
//     sign-in form, which keeps it in an HttpOnly, SameSite=Strict cookie.
//
// Every POST needs the session's CSRF token and passes Go's cross-origin protection
// (Sec-Fetch-Site / Origin); the console sends no CORS headers, and a Content-Security-
// Policy allows only its own script and style.
package console
