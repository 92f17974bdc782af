// A client of the gateway's MCP Tasks and progress with the official TypeScript MCP SDK
// (1.32.x, its experimental Tasks client, the 2025-11-25 form), for the gateway suites
// (test/integration/gateway, test/e2e; the Go side is test/internal/tsclient).
// Usage: node tasks.mjs URL TOKEN MODE TOOL|TASK_ID [ARGS_JSON], MODE one of:
//   task      client.experimental.tasks.callToolStream with a task: prints the stream's
//             message types, the task statuses it saw, the task id and the final result.
//   start     the same, but stops at the task's creation: prints the task id (the task goes
//             on without this client).
//   progress  client.callTool with a timeout (TIMEOUT_MS, default 3000) that progress
//             notifications reset: prints the progress count, how long the call took (ms)
//             and the result (or error).
//   get       tasks/get of TASK_ID (task), and its tasks/result (result) once completed.
//   cancel    tasks/cancel of TASK_ID: prints the answer (task).
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
const out = {};

if (mode === "task" || mode === "start") {
  out.taskSupport = (await client.listTools()).tools.find((t) => t.name === tool)?.execution?.taskSupport;
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
    if (mode === "start" && msg.type === "taskCreated") break;
  }
} else if (mode === "progress") {
  out.progress = 0;
  const start = Date.now();
  try {
    out.result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, CallToolResultSchema, {
      timeout: Number(process.env.TIMEOUT_MS ?? 3000),
      resetTimeoutOnProgress: true,
      onprogress: () => { out.progress++; },
    });
  } catch (e) {
    out.error = String(e);
  }
  out.ms = Date.now() - start;
} else {
  try {
    if (mode === "cancel") {
      out.task = await client.experimental.tasks.cancelTask(tool);
    } else {
      out.task = await client.experimental.tasks.getTask(tool);
      if (out.task.status === "completed") {
        out.result = await client.experimental.tasks.getTaskResult(tool, CallToolResultSchema);
      }
    }
  } catch (e) {
    out.error = String(e);
  }
}
await client.close();
console.log(JSON.stringify(out));
