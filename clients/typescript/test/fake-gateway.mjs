// An in-process stand-in for toolgate's MCP gateway, built with the MCP SDK's server
// classes over streamable HTTP (stateless), serving the workspace tools of
// config/examples/workspace.yaml with the gateway's result shape (internal/gateway
// ResultFor): one text item, structuredContent for a JSON object, isError, and _meta naming
// the call, its phase and reason. The workspace is a temporary folder (root); sh runs the
// host's sh there. Like the demo's policies (config/examples/policies.yaml), a recursive rm
// through sh is Denied (GuardDenied) and a command naming wget parks for approval. A
// command containing REFUSE is refused by the "gateway" (phase Refused, InFlightLimit).
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const obj = (properties, required = []) => ({ type: "object", properties, required, additionalProperties: false });
const TOOLS = [
  { name: "sh", inputSchema: obj({ command: { type: "string" } }, ["command"]) },
  { name: "read_file", inputSchema: obj({ path: { type: "string" }, maxBytes: { type: "integer" } }, ["path"]) },
  { name: "write_file", inputSchema: obj({ path: { type: "string" }, content: { type: "string" } }, ["path", "content"]) },
  {
    name: "edit_file",
    inputSchema: obj({ path: { type: "string" }, old_string: { type: "string" }, new_string: { type: "string" } }, [
      "path",
      "old_string",
      "new_string",
    ]),
  },
  { name: "list", inputSchema: obj({ path: { type: "string" }, pattern: { type: "string" }, recursive: { type: "boolean" } }) },
  {
    name: "grep",
    inputSchema: obj(
      { pattern: { type: "string" }, path: { type: "string" }, glob: { type: "string" }, ignoreCase: { type: "boolean" }, maxMatches: { type: "integer" } },
      ["pattern"],
    ),
  },
];

class ToolError extends Error {}

/**
 * Starts the fake gateway on a loopback port. options.tools limits the tools it serves.
 * Returns { url, root, calls, close }: calls records every tools/call as
 * { tool, arguments, session, call, phase, reason, isError }.
 */
export async function startFakeGateway(options = {}) {
  const root = await mkdtemp(join(tmpdir(), "toolgate-fake-ws-"));
  const served = TOOLS.filter((t) => !options.tools || options.tools.includes(t.name));
  const calls = [];
  let n = 0;

  // The workspace path rules of cmd/tools/internal/wsfs: relative to root, or absolute under it.
  const rel = (p) => {
    const abs = !p ? root : p.startsWith("/") ? resolve(p) : resolve(root, p);
    if (abs !== root && !abs.startsWith(root + "/")) throw new ToolError(`${abs}: an absolute path outside ${root}`);
    return abs;
  };
  const notFound = (abs, err) => {
    if (err?.code === "ENOENT") throw new ToolError(`${abs}: no such file or folder`);
    throw err;
  };
  const walk = async (dir, visit) => {
    for (const e of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      await visit(p, e);
      if (e.isDirectory()) await walk(p, visit);
    }
  };
  // A glob of the list tool: "**" is any number of folders, "*" and "?" stay within one.
  const globRe = (pattern) => {
    const parts = pattern.split("/");
    const re = parts
      .map((part, i) => {
        const last = i === parts.length - 1;
        if (part === "**") return last ? ".*" : "(?:[^/]+/)*";
        return part.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]") + (last ? "" : "/");
      })
      .join("");
    return new RegExp("^" + re + "$");
  };

  const bodies = {
    async sh({ command }) {
      return await new Promise((done) => {
        execFile("sh", ["-c", command], { cwd: root, timeout: 20_000 }, (err, stdout, stderr) => {
          const exitCode = err ? (typeof err.code === "number" ? err.code : 1) : 0;
          if (exitCode === 0) return done({ ok: { exitCode, stdout, stderr } });
          const last = stderr.trim().split("\n").pop();
          const error = `the command exited with code ${exitCode}${last ? ": " + last : ""}`;
          done({ fail: { isError: true, error, exitCode, stdout, stderr }, message: error });
        });
      });
    },
    async read_file({ path, maxBytes = 65536 }) {
      const abs = rel(path);
      const info = await stat(abs).catch((e) => notFound(abs, e));
      if (info.isDirectory()) return { ok: { path: abs, size: 0, entries: (await readdir(abs, { withFileTypes: true })).map((e) => e.name + (e.isDirectory() ? "/" : "")).sort() } };
      const data = await readFile(abs, "utf8");
      const truncated = Buffer.byteLength(data) > maxBytes;
      return { ok: { path: abs, size: info.size, content: truncated ? data.slice(0, maxBytes) : data, ...(truncated ? { truncated } : {}) } };
    },
    async write_file({ path, content }) {
      const abs = rel(path);
      await mkdir(dirname(abs), { recursive: true });
      await writeFile(abs, content);
      return { ok: { path: abs, bytes: Buffer.byteLength(content) } };
    },
    async edit_file({ path, old_string, new_string }) {
      const abs = rel(path);
      const text = await readFile(abs, "utf8").catch((e) => notFound(abs, e));
      const count = text.split(old_string).length - 1;
      if (count === 0) throw new ToolError(`${abs}: old_string not found; nothing was changed`);
      if (count > 1) throw new ToolError(`${abs}: old_string occurs ${count} times; give more surrounding text so that it is unique; nothing was changed`);
      const out = text.replace(old_string, () => new_string);
      await writeFile(abs, out);
      return { ok: { path: abs, bytes: Buffer.byteLength(out) } };
    },
    async list({ path, pattern, recursive }) {
      const abs = rel(path);
      await stat(abs).catch((e) => notFound(abs, e));
      const entries = [];
      const re = pattern ? globRe(pattern) : null;
      if (!pattern && !recursive) {
        for (const e of await readdir(abs, { withFileTypes: true })) entries.push(e.name + (e.isDirectory() ? "/" : ""));
        entries.sort();
      } else {
        await walk(abs, async (p, e) => {
          const under = relative(abs, p);
          if (!re || re.test(under)) entries.push(under + (e.isDirectory() ? "/" : ""));
        });
      }
      return { ok: { path: abs, entries } };
    },
    async grep({ pattern, path, glob, ignoreCase, maxMatches = 200 }) {
      const abs = rel(path);
      const re = new RegExp(pattern, ignoreCase ? "i" : "");
      const nameRe = glob ? globRe(glob) : null;
      const matches = [];
      let truncated = false;
      let files = 0;
      const search = async (p) => {
        if (nameRe && !nameRe.test(p.split("/").pop())) return;
        files++;
        (await readFile(p, "utf8")).split("\n").forEach((line, i) => {
          if (!re.test(line)) return;
          if (matches.length >= maxMatches) truncated = true;
          else matches.push({ path: p, line: i + 1, text: line });
        });
      };
      const info = await stat(abs).catch((e) => notFound(abs, e));
      if (info.isFile()) await search(abs);
      else await walk(abs, async (p, e) => e.isFile() && (await search(p)));
      return { ok: { matches, filesSearched: files, ...(truncated ? { truncated } : {}) } };
    },
  };

  // The gateway's result of a call, and the policies' verdicts.
  const meta = (call, phase, reason) => ({
    "toolgate.dev/call": call,
    "toolgate.dev/namespace": "fake",
    "toolgate.dev/phase": phase,
    "toolgate.dev/reason": reason,
  });
  async function callTool(name, args, reqMeta) {
    const record = { tool: name, arguments: args, session: reqMeta?.["toolgate.dev/session"] };
    calls.push(record);
    const done = (result) => {
      Object.assign(record, {
        call: result._meta["toolgate.dev/call"],
        phase: result._meta["toolgate.dev/phase"],
        reason: result._meta["toolgate.dev/reason"],
        isError: result.isError === true,
      });
      return result;
    };
    const command = name === "sh" ? String(args?.command ?? "") : "";
    if (command.includes("REFUSE")) {
      return done({
        content: [{ type: "text", text: "16 calls of this identity are in flight; try again when one ended." }],
        isError: true,
        _meta: { "toolgate.dev/phase": "Refused", "toolgate.dev/reason": "InFlightLimit" },
      });
    }
    const call = `fake-${name.replace(/_/g, "-")}-${++n}`;
    if (/(^|[\s;&|(`/])rm\s+(-\S*\s+)*(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)(\s|$)/.test(command)) {
      return done({
        content: [{ type: "text", text: "Recursive rm (rm -rf and the like) is never allowed through the sh tool." }],
        isError: true,
        _meta: meta(call, "Denied", "GuardDenied"),
      });
    }
    if (/(^|\s)wget(\s|$)/.test(command)) {
      return done({
        content: [
          {
            type: "text",
            text: `The call ${call} of tool sh awaits human approval and has not run. An approver can allow it with \`toolgate approve ${call} -n fake\` (or refuse it with \`toolgate deny ${call} -n fake\`).`,
          },
        ],
        isError: true,
        _meta: meta(call, "AwaitingApproval", "AwaitingApproval"),
      });
    }
    if (!bodies[name]) throw new Error(`unknown tool ${name}`);
    let r;
    try {
      r = await bodies[name](args ?? {});
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      r = { fail: { isError: true, error: err.message }, message: err.message };
    }
    if (r.ok) {
      return done({ content: [{ type: "text", text: JSON.stringify(r.ok) }], structuredContent: r.ok, _meta: meta(call, "Succeeded", "Completed") });
    }
    const fields = ["exitCode", "stdout", "stderr"].filter((k) => k in r.fail).map((k) => `${k}: ${r.fail[k]}`);
    return done({
      content: [{ type: "text", text: [r.message, ...fields].join("\n") }],
      structuredContent: r.fail,
      isError: true,
      _meta: meta(call, "Failed", "ToolError"),
    });
  }

  const newServer = () => {
    const server = new Server({ name: "fake-toolgate", version: "0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: served.map((t) => ({ ...t, description: t.name })) }));
    server.setRequestHandler(CallToolRequestSchema, async (req) => {
      if (!served.some((t) => t.name === req.params.name)) throw new Error(`unknown tool ${req.params.name}`);
      return await callTool(req.params.name, req.params.arguments, req.params._meta);
    });
    return server;
  };

  const http = createServer(async (req, res) => {
    if (options.token && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401).end();
      return;
    }
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise((ok) => http.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${http.address().port}/`;
  return {
    url,
    root,
    calls,
    async close() {
      await new Promise((ok) => http.close(ok));
      await rm(root, { recursive: true, force: true });
    },
  };
}
