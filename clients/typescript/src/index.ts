// toolgate as LangChain deepagents' sandbox backend: every operation of the protocol is a
// tools/call of toolgate's MCP gateway, so a ToolCall with its own policies, approvals,
// Pod and record. execute is the `sh` tool; the file operations are the workspace tools
// (read_file, write_file, edit_file, list, grep) where the gateway serves them, else
// BaseSandbox's implementations on top of execute. All calls carry one session key, so
// they share the session's workspace (docs/connect-your-agent.md, "One workspace per task").
import { randomUUID } from "node:crypto";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { BaseSandbox } from "deepagents";
import type {
  EditResult,
  ExecuteResponse,
  FileDownloadResponse,
  FileInfo,
  FileOperationError,
  FileUploadResponse,
  GlobResult,
  GrepResult,
  LsResult,
  ReadResult,
  WriteResult,
} from "deepagents";

/** The _meta keys of the gateway (internal/gateway): the request's session, the result's call. */
export const META_SESSION = "toolgate.dev/session";
export const META_CALL = "toolgate.dev/call";
export const META_PHASE = "toolgate.dev/phase";
export const META_REASON = "toolgate.dev/reason";

/** The names of the tools the sandbox calls; the defaults are config/examples/workspace.yaml's. */
export interface ToolNames {
  sh: string;
  read: string;
  write: string;
  edit: string;
  list: string;
  grep: string;
}

export const DEFAULT_TOOLS: ToolNames = {
  sh: "sh",
  read: "read_file",
  write: "write_file",
  edit: "edit_file",
  list: "list",
  grep: "grep",
};

/** One tools/call the sandbox made, as the gateway answered it. */
export interface CallRecord {
  /** The tool called. */
  tool: string;
  /** The ToolCall's name (_meta toolgate.dev/call); absent when the gateway made none. */
  call?: string;
  /** toolgate.dev/phase: Succeeded, Failed, Denied, AwaitingApproval, Refused … */
  phase?: string;
  /** toolgate.dev/reason. */
  reason?: string;
  isError: boolean;
}

export interface ToolgateSandboxOptions {
  /**
   * The session key sent as _meta["toolgate.dev/session"] with every call: with a gateway
   * run with --session-per-client, the calls of one key (and one identity) share one
   * spec.session, so one workspace. Default: "deepagents-" and a random UUID. It is the
   * sandbox's id.
   */
  session?: string;
  /** Where the workspace tools mount the workspace (the sh tool's working directory). */
  root?: string;
  /** Other tool names than the example ones. */
  tools?: Partial<ToolNames>;
  /** How long one call may take, reset by the gateway's progress notifications. Default 10 min. */
  timeoutMs?: number;
  /**
   * How long a call a policy parked for approval is waited for, calling it again every
   * approvalPollMs (the gateway answers a repeated call with the parked call, its result once
   * approved and run). Default 0: the model gets an error at once, naming the call and
   * `toolgate approve`.
   */
  approvalWaitMs?: number;
  approvalPollMs?: number;
  /** Called after every tools/call. */
  onCall?: (record: CallRecord) => void;
}

export interface ConnectOptions extends ToolgateSandboxOptions {
  /** The gateway's streamable HTTP endpoint, e.g. http://10.96.0.20:8090/ */
  url: string | URL;
  /** A bearer token for the audience toolgate (kubectl create token … --audience toolgate). */
  token?: string;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
}

/** What a tools/call came back with. */
interface Outcome {
  isError: boolean;
  text: string;
  structured?: Record<string, unknown>;
  record: CallRecord;
}

const EMPTY_CONTENT = "System reminder: File exists but has empty contents";
const READ_MAX_BYTES = 1 << 20; // the read_file tool's maximum
const GREP_MAX_MATCHES = 2000; // the grep tool's maximum
const DROPPED = /\n\[\d+ more bytes dropped\]$/; // the sh tool's mark of a cut stream

/**
 * A deepagents sandbox whose every operation is a toolgate ToolCall.
 *
 *   const sandbox = await ToolgateSandbox.connect({ url, token });
 *   const agent = createDeepAgent({ model, backend: sandbox });
 */
export class ToolgateSandbox extends BaseSandbox {
  readonly id: string;
  /** Every tools/call made, in order. */
  readonly calls: CallRecord[] = [];
  readonly client: Client;
  readonly root: string;
  readonly tools: ToolNames;
  private readonly timeoutMs: number;
  private readonly approvalWaitMs: number;
  private readonly approvalPollMs: number;
  private readonly onCall?: (record: CallRecord) => void;
  private served?: Promise<Set<string>>;
  private owned = false;

  /** A sandbox over an MCP client already connected to the gateway. */
  constructor(client: Client, options: ToolgateSandboxOptions = {}) {
    super();
    this.client = client;
    this.id = options.session ?? `deepagents-${randomUUID()}`;
    this.root = (options.root ?? "/workspace").replace(/\/+$/, "") || "/";
    this.tools = { ...DEFAULT_TOOLS, ...options.tools };
    this.timeoutMs = options.timeoutMs ?? 600_000;
    this.approvalWaitMs = options.approvalWaitMs ?? 0;
    this.approvalPollMs = options.approvalPollMs ?? 2_000;
    this.onCall = options.onCall;
  }

  /** Connects to the gateway over streamable HTTP with a bearer token; close() disconnects. */
  static async connect(options: ConnectOptions): Promise<ToolgateSandbox> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.Authorization = `Bearer ${options.token}`;
    const client = new Client({ name: "toolgate-deepagents", version: "0.1.0" });
    const url = typeof options.url === "string" ? new URL(options.url) : options.url;
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
    const sandbox = new ToolgateSandbox(client, options);
    sandbox.owned = true;
    return sandbox;
  }

  /** Closes the MCP client when connect() made it. */
  async close(): Promise<void> {
    if (this.owned) await this.client.close();
  }

  // ---- execute: the sh tool ----

  async execute(command: string): Promise<ExecuteResponse> {
    if (!(await this.serves(this.tools.sh))) {
      return { output: `Error: the toolgate gateway serves no tool ${this.tools.sh}; nothing was run.`, exitCode: null, truncated: false };
    }
    const o = await this.invoke(this.tools.sh, { command });
    const s = o.structured;
    const ran = s !== undefined && typeof s.exitCode === "number" && typeof s.stdout === "string";
    if (!ran) {
      if (!o.isError) return { output: o.text, exitCode: 0, truncated: false };
      // It did not run (a denial, a refusal, approval pending) or failed outside the command:
      // no exit code, the reason in the output.
      return { output: `Error: ${explain(o)}`, exitCode: null, truncated: false };
    }
    const stdout = String(s.stdout ?? "");
    const stderr = String(s.stderr ?? "");
    const sep = stdout && stderr && !stdout.endsWith("\n") ? "\n" : "";
    return {
      output: stdout + sep + stderr,
      exitCode: s.exitCode as number,
      truncated: DROPPED.test(stdout) || DROPPED.test(stderr),
    };
  }

  // ---- the file operations: the workspace tools ----

  async read(filePath: string, offset = 0, limit = 500): Promise<ReadResult> {
    if (!(await this.serves(this.tools.read))) return super.read(filePath, offset, limit);
    const o = await this.invoke(this.tools.read, { path: this.toolPath(filePath), maxBytes: READ_MAX_BYTES });
    if (o.isError) return { error: explain(o) };
    const s = o.structured ?? {};
    if (Array.isArray(s.entries)) return { error: `${filePath} is a folder, not a file (list it with ls)` };
    const content = typeof s.content === "string" ? s.content : o.text;
    const mimeType = "text/plain"; // the read_file tool reads UTF-8 text only
    if (content.trim() === "") return { content: EMPTY_CONTENT, mimeType };
    const lines = content.split("\n");
    const total = lines[lines.length - 1] === "" ? lines.length - 1 : lines.length;
    const start = Math.max(0, Math.floor(offset));
    const count = Math.max(0, Math.floor(limit));
    if (start >= total) return { error: `Line offset ${start} exceeds file length (${total} lines)` };
    if (count === 0) return { content: "", mimeType };
    const end = Math.min(start + count, total);
    const cut = s.truncated === true; // past the tool's 1 MiB: the total is not known
    return {
      content: lines.slice(start, end).join("\n"),
      mimeType,
      totalLines: cut ? undefined : total,
      startLine: start + 1,
      endLine: end,
      nextOffset: end < total || cut ? end : undefined,
    };
  }

  async write(filePath: string, content: string): Promise<WriteResult> {
    if (!(await this.serves(this.tools.write))) return super.write(filePath, content);
    const o = await this.invoke(this.tools.write, { path: this.toolPath(filePath), content });
    if (o.isError) return { error: `Error writing ${filePath}: ${explain(o)}` };
    return { path: filePath, filesUpdate: null, metadata: callMetadata(o) };
  }

  async edit(filePath: string, oldString: string, newString: string, replaceAll = false): Promise<EditResult> {
    // edit_file replaces exactly one occurrence; every occurrence, or an empty old string
    // (an empty file), is BaseSandbox's read (read_file) then write (write_file).
    if (replaceAll || oldString === "" || !(await this.serves(this.tools.edit))) {
      return super.edit(filePath, oldString, newString, replaceAll);
    }
    const o = await this.invoke(this.tools.edit, {
      path: this.toolPath(filePath),
      old_string: oldString,
      new_string: newString,
    });
    if (o.isError) return { error: `Error editing ${filePath}: ${explain(o)}` };
    return { path: filePath, filesUpdate: null, occurrences: 1, metadata: callMetadata(o) };
  }

  async ls(path: string): Promise<LsResult> {
    if (!(await this.serves(this.tools.list))) return super.ls(path);
    const o = await this.invoke(this.tools.list, { path: this.toolPath(path) });
    if (o.isError) return { error: explain(o) };
    return { files: this.entries(o.structured) };
  }

  async glob(pattern: string, path?: string): Promise<GlobResult> {
    if (!(await this.serves(this.tools.list))) return super.glob(pattern, path);
    let base = this.toolPath(path);
    if (pattern.startsWith(this.root + "/")) {
      base = this.root;
      pattern = pattern.slice(this.root.length + 1);
    } else if (pattern.startsWith("/")) {
      pattern = pattern.replace(/^\/+/, "");
    }
    const o = await this.invoke(this.tools.list, { path: base, pattern });
    if (o.isError) return { error: explain(o) };
    return { files: this.entries(o.structured), truncated: o.structured?.truncated === true };
  }

  async grep(pattern: string, path?: string | null, glob?: string | null, maxCount?: number | null): Promise<GrepResult> {
    if (!(await this.serves(this.tools.grep))) return super.grep(pattern, path ?? undefined, glob, maxCount);
    // deepagents' grep is literal; the tool's is a regular expression (RE2): quote it.
    const args: Record<string, unknown> = { pattern: quoteMeta(pattern), path: this.toolPath(path) };
    if (glob) args.glob = glob;
    if (maxCount && maxCount > 0) args.maxMatches = Math.min(Math.floor(maxCount), GREP_MAX_MATCHES);
    const o = await this.invoke(this.tools.grep, args);
    if (o.isError) return { error: explain(o) };
    const raw = Array.isArray(o.structured?.matches) ? (o.structured!.matches as Array<Record<string, unknown>>) : [];
    const matches = raw.map((m) => ({ path: String(m.path), line: Number(m.line), text: String(m.text ?? "") }));
    return { matches, truncated: o.structured?.truncated === true };
  }

  /** BaseSandbox's readRaw and edit read through here: read_file, UTF-8 text only. */
  async downloadFiles(paths: string[]): Promise<FileDownloadResponse[]> {
    if (!(await this.serves(this.tools.read))) return this.downloadWithSh(paths);
    const out: FileDownloadResponse[] = [];
    for (const path of paths) {
      const o = await this.invoke(this.tools.read, { path: this.toolPath(path), maxBytes: READ_MAX_BYTES });
      const s = o.structured ?? {};
      if (o.isError) out.push({ path, content: null, error: operationError(o.text) });
      else if (Array.isArray(s.entries)) out.push({ path, content: null, error: "is_directory" });
      // a file cut at 1 MiB would be written back cut: refuse it
      else if (s.truncated === true) out.push({ path, content: null, error: "invalid_path" });
      else out.push({ path, content: new TextEncoder().encode(String(s.content ?? "")), error: null });
    }
    return out;
  }

  /** BaseSandbox's write and edit write through here: write_file, UTF-8 text only. */
  async uploadFiles(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    if (!(await this.serves(this.tools.write))) return this.uploadWithSh(files);
    const out: FileUploadResponse[] = [];
    for (const [path, data] of files) {
      let content: string;
      try {
        content = new TextDecoder("utf-8", { fatal: true }).decode(data);
      } catch {
        out.push({ path, error: "invalid_path" }); // write_file writes text
        continue;
      }
      const o = await this.invoke(this.tools.write, { path: this.toolPath(path), content });
      out.push({ path, error: o.isError ? operationError(o.text) : null });
    }
    return out;
  }

  /** Without read_file: base64 through sh (busybox has it). */
  private async downloadWithSh(paths: string[]): Promise<FileDownloadResponse[]> {
    const out: FileDownloadResponse[] = [];
    for (const path of paths) {
      const q = shellQuote(this.toolPath(path));
      const r = await this.execute(
        `if [ -d ${q} ]; then exit 3; fi; [ -f ${q} ] || { echo "${q}: no such file or folder"; exit 1; }; base64 < ${q} | tr -d '\\n'`,
      );
      if (r.exitCode === 0) out.push({ path, content: new Uint8Array(Buffer.from(r.output.trim(), "base64")), error: null });
      else out.push({ path, content: null, error: r.exitCode === 3 ? "is_directory" : operationError(r.output) });
    }
    return out;
  }

  /** Without write_file: base64 through sh, so only files whose command fits the tool's bound. */
  private async uploadWithSh(files: Array<[string, Uint8Array]>): Promise<FileUploadResponse[]> {
    const out: FileUploadResponse[] = [];
    for (const [path, data] of files) {
      const q = shellQuote(this.toolPath(path));
      const b64 = Buffer.from(data).toString("base64");
      const r = await this.execute(`mkdir -p "$(dirname ${q})" && printf '%s' '${b64}' | base64 -d > ${q}`);
      out.push({ path, error: r.exitCode === 0 ? null : operationError(r.output) });
    }
    return out;
  }

  // ---- the gateway ----

  /** A path as the workspace tools take it: "/" (deepagents' default) is the workspace. */
  private toolPath(path: string | null | undefined): string {
    if (!path || path === "/") return this.root;
    return path;
  }

  /** The list tool's entries (relative, folders ending in "/") as absolute FileInfos. */
  private entries(s: Record<string, unknown> | undefined): FileInfo[] {
    const base = String(s?.path ?? this.root).replace(/\/+$/, "");
    const entries = Array.isArray(s?.entries) ? (s!.entries as unknown[]) : [];
    return entries.map((e) => {
      const name = String(e);
      return { path: `${base}/${name}`, is_dir: name.endsWith("/") };
    });
  }

  private async serves(tool: string): Promise<boolean> {
    if (!this.served) {
      this.served = (async () => {
        const names = new Set<string>();
        let cursor: string | undefined;
        do {
          const page = await this.client.listTools(cursor ? { cursor } : undefined);
          for (const t of page.tools) names.add(t.name);
          cursor = page.nextCursor;
        } while (cursor);
        return names;
      })();
      this.served.catch(() => (this.served = undefined)); // try again next time
    }
    try {
      return (await this.served).has(tool);
    } catch {
      return true; // tools/list failed: call the tool, and let its call say what is wrong
    }
  }

  /** One tools/call in the sandbox's session; a parked call is waited for up to approvalWaitMs. */
  private async invoke(tool: string, args: Record<string, unknown>): Promise<Outcome> {
    const deadline = Date.now() + this.approvalWaitMs;
    for (;;) {
      const o = await this.callOnce(tool, args);
      if (o.record.reason !== "AwaitingApproval" || Date.now() + this.approvalPollMs > deadline) return o;
      await new Promise((resolve) => setTimeout(resolve, this.approvalPollMs));
    }
  }

  private async callOnce(tool: string, args: Record<string, unknown>): Promise<Outcome> {
    let o: Outcome;
    try {
      const res = await this.client.callTool({ name: tool, arguments: args, _meta: { [META_SESSION]: this.id } }, undefined, {
        timeout: this.timeoutMs,
        resetTimeoutOnProgress: true,
        onprogress: () => {},
      });
      const meta = (res._meta ?? {}) as Record<string, unknown>;
      const content = Array.isArray(res.content) ? res.content : [];
      const text = content
        .filter((c): c is { type: "text"; text: string } => c.type === "text")
        .map((c) => c.text)
        .join("\n");
      const structured = res.structuredContent as Record<string, unknown> | undefined;
      o = {
        isError: res.isError === true,
        text,
        structured: structured && typeof structured === "object" ? structured : undefined,
        record: {
          tool,
          call: str(meta[META_CALL]),
          phase: str(meta[META_PHASE]),
          reason: str(meta[META_REASON]),
          isError: res.isError === true,
        },
      };
    } catch (err) {
      // A protocol or transport error (an unknown tool, the gateway unreachable): the model
      // sees it as the operation's error rather than the agent crashing.
      o = {
        isError: true,
        text: `the tools/call of ${tool} failed: ${err instanceof Error ? err.message : String(err)}`,
        record: { tool, isError: true, reason: "ProtocolError" },
      };
    }
    this.calls.push(o.record);
    this.onCall?.(o.record);
    return o;
  }
}

/** The text the model gets for a failed call: the tool's own text, prefixed by what toolgate did. */
function explain(o: Outcome): string {
  const { call, phase, reason } = o.record;
  const text = o.text.trim() || "(no message)";
  if (reason === "AwaitingApproval") {
    return `${text} It has not run: a person must approve it first. Once approved, the same call (same arguments) returns its result.`;
  }
  if (phase === "Refused") return `the toolgate gateway refused the call (${reason}): ${text}`;
  if (phase === "Denied") return `a toolgate policy denied the call${call ? " " + call : ""} (${reason}): ${text}`;
  return text; // the tool's own message; StillRunning and the like name the call themselves
}

function callMetadata(o: Outcome): Record<string, unknown> | undefined {
  return o.record.call ? { [META_CALL]: o.record.call } : undefined;
}

function operationError(text: string): FileOperationError {
  if (/no such file/i.test(text)) return "file_not_found";
  if (/is a folder|is the workspace folder/i.test(text)) return "is_directory";
  if (/permission denied|read-only/i.test(text)) return "permission_denied";
  return "invalid_path";
}

/** RE2's QuoteMeta: the pattern as a literal. */
export function quoteMeta(s: string): string {
  return s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}
