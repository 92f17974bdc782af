// A client of the gateway's MCP Tasks and progress with the official TypeScript MCP SDK
// (1.32.x, its experimental Tasks client, the 2025-11-25 form), for the gateway suites
// (test/integration/gateway, test/e2e; the Go side is test/internal/tsclient).
// Usage: node tasks.mjs URL TOKEN MODE TOOL|TASK_ID [ARGS_JSON], MODE one of:
//   task      client.experimental.tasks.callToolStream with a task: prints each task status
//             as it sees it ({"status":...}), then the stream's message types, the statuses,
//             the task id and the final result.
//   start     the same, but stops at the task's creation: prints the task id (the task goes
//             on without this client).
//   progress  client.callTool with a timeout (TIMEOUT_MS, default 3000) that progress
//             notifications reset: prints the progress count, how long the call took (ms)
//             and the result (or error).
//   get       tasks/get of TASK_ID (task), and its tasks/result (result) once completed.
//   cancel    tasks/cancel of TASK_ID: prints the answer (task).
//   sessions  a second client, so a second MCP session of the same token: the first writes
//             notes.txt, the second reads it, writes its own, then both read; TOOL names the
//             tools that write and read, comma-separated (default write_file,read_file).
//             Prints each step (steps) and the two session IDs (sessions).
// It prints one JSON line last: the summary.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token, mode, tool, args] = process.argv.slice(2);
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "ts-tasks-trial", version: "0" });
  await client.connect(transport);
  return [client, transport];
};
const [client, transport] = await connect();
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
    if (msg.type === "taskCreated" || msg.type === "taskStatus") {
      out.statuses.push(msg.task.status);
      console.log(JSON.stringify({ status: msg.task.status })); // as it comes: tsclient's SawStatus
    }
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
} else if (mode === "sessions") {
  const [write, read] = (tool || "write_file,read_file").split(",");
  const [second, secondTransport] = await connect();
  for (let i = 0; !(await client.listTools()).tools.some((t) => t.name === write); i++) {
    if (i === 60) throw new Error(`no ${write} in tools/list`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const step = async (c, name, args) => {
    const r = await c.callTool({ name, arguments: args }, CallToolResultSchema,
      { timeout: 120000, resetTimeoutOnProgress: true, onprogress: () => {} });
    return { tool: name, isError: r.isError === true, meta: r._meta, structuredContent: r.structuredContent, text: r.content?.[0]?.text };
  };
  const notes = (content) => ({ path: "notes.txt", ...(content && { content }) });
  out.steps = [
    await step(client, write, notes("from the first session")),
    await step(second, read, notes()),
    await step(second, write, notes("from the second session")),
    await step(client, read, notes()),
    await step(second, read, notes()),
  ];
  out.sessions = [transport.sessionId, secondTransport.sessionId];
  await second.close();
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
