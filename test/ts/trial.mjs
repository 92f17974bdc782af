// A trial of the gateway with the official TypeScript MCP SDK: connect with a bearer
// token, list the tools, call one, close. Usage: node trial.mjs URL TOKEN TOOL ARGS_JSON
// (with @modelcontextprotocol/sdk resolvable, e.g. NODE_PATH=/dir/node_modules). It prints
// one JSON line: the tool names, the call's result, and the session ID it used.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-trial", version: "0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
const session = transport.sessionId;
await client.close(); // sends no DELETE: the session expires on the gateway
console.log(JSON.stringify({ tools, result, session }));
