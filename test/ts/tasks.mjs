// A trial of the gateway's MCP Tasks and progress with the official TypeScript MCP SDK
// (1.32.x, its experimental Tasks client, the 2025-11-25 form).
// Usage: node tasks.mjs URL TOKEN MODE TOOL ARGS_JSON, MODE one of:
//   task      client.experimental.tasks.callToolStream with a task: prints the stream's
//             message types, the task statuses it saw, the task id and the final result.
//   progress  client.callTool with a short timeout (TIMEOUT_MS, default 3000) that progress
//             notifications reset: prints the progress count and the result (or error).
// It prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, mode, tool, args] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-tasks-trial", version: "0" });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const out = { taskSupport: tools.find((t) => t.name === tool)?.execution?.taskSupport };

if (mode === "task") {
  out.types = [];
  out.statuses = [];
  const stream = client.experimental.tasks.callToolStream(
    { name: tool, arguments: JSON.parse(args) },
    CallToolResultSchema,
    { task: {}, timeout: 120000 },
  );
  for await (const msg of stream) {
    out.types.push(msg.type);
    if (msg.type === "taskCreated") out.taskId = msg.task.taskId;
    if (msg.type === "taskCreated" || msg.type === "taskStatus") out.statuses.push(msg.task.status);
    if (msg.type === "result") out.result = msg.result;
    if (msg.type === "error") out.error = String(msg.error);
  }
} else {
  out.progress = 0;
  try {
    out.result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, CallToolResultSchema, {
      timeout: Number(process.env.TIMEOUT_MS ?? 3000),
      resetTimeoutOnProgress: true,
      onprogress: () => { out.progress++; },
    });
  } catch (e) {
    out.error = String(e);
  }
}
await client.close();
console.log(JSON.stringify(out));
