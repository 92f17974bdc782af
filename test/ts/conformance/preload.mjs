// Loaded before the official MCP conformance CLI (@modelcontextprotocol/conformance, pinned
// in ../package.json) by the gateway suite's conformance spec (test/integration/gateway,
// through test/internal/tsclient):
//   TOOLGATE_TOKEN=... node --import ./conformance/preload.mjs \
//     node_modules/@modelcontextprotocol/conformance/dist/index.js server --url URL --scenario NAME
// It does two things the CLI cannot:
//   - sends Authorization: Bearer $TOOLGATE_TOKEN on every request, through fetch (here) and
//     undici's request (undici.mjs): the CLI's client has no option for a header, and
//     toolgate's HTTP gateway authenticates every request;
//   - on Node 20, gives the CLI the fs.globSync it imports (fs.mjs; Node 22's, which only its
//     tier-check command calls), so that the module loads at all.
import { register } from "node:module";

const token = process.env.TOOLGATE_TOKEN;
if (token) {
  const fetch = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}
register("./hooks.mjs", import.meta.url);
