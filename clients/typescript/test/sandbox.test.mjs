// ToolgateSandbox against the in-process fake gateway (fake-gateway.mjs): no cluster. Run
// with `npm test` after `npm run build` (it imports dist/).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { ToolgateSandbox, quoteMeta } from "../dist/index.js";
import { startFakeGateway } from "./fake-gateway.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const TOKEN = "fake-token";

describe("ToolgateSandbox on the workspace tools", () => {
  let gw, sb, ws;
  before(async () => {
    gw = await startFakeGateway({ token: TOKEN });
    ws = gw.root;
    sb = await ToolgateSandbox.connect({ url: gw.url, token: TOKEN, root: ws });
  });
  after(async () => {
    await sb.close();
    await gw.close();
  });
  // calls returns the tools the fake saw since mark, checking they were all in the sandbox's session.
  const since = (mark) => {
    const calls = gw.calls.slice(mark);
    for (const c of calls) assert.equal(c.session, sb.id, `${c.tool} in the sandbox's session`);
    return calls.map((c) => c.tool);
  };

  test("the id is the session key sent with every call", () => {
    assert.match(sb.id, /^deepagents-[0-9a-f-]{36}$/);
  });

  test("execute runs sh: output, exit code, truncation", async () => {
    const mark = gw.calls.length;
    assert.deepEqual(await sb.execute("echo out; echo err >&2"), { output: "out\nerr\n", exitCode: 0, truncated: false });
    const failed = await sb.execute("echo partial; exit 3");
    assert.equal(failed.exitCode, 3);
    assert.equal(failed.output, "partial\n");
    const cut = await sb.execute("printf 'x\\n[12 more bytes dropped]'");
    assert.equal(cut.truncated, true);
    assert.deepEqual(since(mark), ["sh", "sh", "sh"]);
    assert.deepEqual(
      sb.calls.slice(-3).map((c) => [c.phase, c.reason, c.isError]),
      [
        ["Succeeded", "Completed", false],
        ["Failed", "ToolError", true],
        ["Succeeded", "Completed", false],
      ],
    );
  });

  test("write, then read with pagination: write_file and read_file", async () => {
    const mark = gw.calls.length;
    const w = await sb.write(`${ws}/notes/a.txt`, "one\ntwo\nthree\n");
    assert.equal(w.error, undefined);
    assert.equal(w.path, `${ws}/notes/a.txt`);
    assert.equal(w.filesUpdate, null);
    assert.match(String(w.metadata?.["toolgate.dev/call"]), /^fake-write-file-/);
    const all = await sb.read(`${ws}/notes/a.txt`);
    assert.deepEqual(all, { content: "one\ntwo\nthree", mimeType: "text/plain", totalLines: 3, startLine: 1, endLine: 3, nextOffset: undefined });
    const page = await sb.read(`${ws}/notes/a.txt`, 1, 1);
    assert.deepEqual([page.content, page.startLine, page.endLine, page.nextOffset], ["two", 2, 2, 2]);
    assert.match((await sb.read(`${ws}/notes/a.txt`, 5, 1)).error, /exceeds file length \(3 lines\)/);
    assert.deepEqual(since(mark), ["write_file", "read_file", "read_file", "read_file"]);
  });

  test("read errors: a missing file, a folder, an empty file", async () => {
    assert.match((await sb.read(`${ws}/missing.txt`)).error, /no such file or folder/);
    assert.match((await sb.read(`${ws}/notes`)).error, /is a folder/);
    await sb.write(`${ws}/empty.txt`, "");
    assert.equal((await sb.read(`${ws}/empty.txt`)).content, "System reminder: File exists but has empty contents");
  });

  test("edit: one occurrence through edit_file, its refusals, replaceAll as read then write", async () => {
    await sb.write(`${ws}/e.txt`, "alpha beta alpha\ngamma\n");
    let mark = gw.calls.length;
    const one = await sb.edit(`${ws}/e.txt`, "gamma", "delta");
    assert.deepEqual([one.error, one.occurrences, one.path], [undefined, 1, `${ws}/e.txt`]);
    assert.deepEqual(since(mark), ["edit_file"]);
    assert.match((await sb.edit(`${ws}/e.txt`, "alpha", "omega")).error, /occurs 2 times/);
    assert.match((await sb.edit(`${ws}/e.txt`, "zeta", "omega")).error, /old_string not found/);
    mark = gw.calls.length;
    const all = await sb.edit(`${ws}/e.txt`, "alpha", "omega", true);
    assert.deepEqual([all.error, all.occurrences], [undefined, 2]);
    assert.deepEqual(since(mark), ["read_file", "write_file"]);
    assert.equal((await sb.read(`${ws}/e.txt`)).content, "omega beta omega\ndelta");
  });

  test("ls, glob and grep: the list and grep tools", async () => {
    await sb.write(`${ws}/src/main.go`, "package main // a.b\n");
    await sb.write(`${ws}/src/deep/util.go`, "package deep // axb\n");
    const mark = gw.calls.length;
    const ls = await sb.ls(`${ws}/src`);
    assert.deepEqual(ls.files, [
      { path: `${ws}/src/deep/`, is_dir: true },
      { path: `${ws}/src/main.go`, is_dir: false },
    ]);
    const root = await sb.ls("/"); // deepagents' default path is the workspace
    assert.ok(root.files.some((f) => f.path === `${ws}/src/`));
    const glob = await sb.glob("**/*.go", `${ws}/src`);
    assert.deepEqual(
      glob.files.map((f) => f.path),
      [`${ws}/src/deep/util.go`, `${ws}/src/main.go`],
    );
    const grep = await sb.grep("a.b", `${ws}/src`);
    assert.deepEqual(grep.matches, [{ path: `${ws}/src/main.go`, line: 1, text: "package main // a.b" }], "a literal, not a regular expression");
    const globbed = await sb.grep("package", ws, "util.go");
    assert.deepEqual(
      globbed.matches.map((m) => m.path),
      [`${ws}/src/deep/util.go`],
    );
    const capped = await sb.grep("package", ws, null, 1);
    assert.deepEqual([capped.matches.length, capped.truncated], [1, true]);
    assert.deepEqual(since(mark), ["list", "list", "list", "grep", "grep", "grep"]);
    assert.match((await sb.ls(`${ws}/nowhere`)).error, /no such file or folder/);
  });

  test("a refusal of the gateway: an error with its reason, no exit code", async () => {
    const r = await sb.execute("echo REFUSE");
    assert.equal(r.exitCode, null);
    assert.match(r.output, /^Error: the toolgate gateway refused the call \(InFlightLimit\): 16 calls/);
    assert.deepEqual(sb.calls.at(-1), { tool: "sh", call: undefined, phase: "Refused", reason: "InFlightLimit", isError: true });
  });

  test("a policy's denial: an error naming the call and the reason", async () => {
    const r = await sb.execute(`rm -rf ${ws}/src`);
    assert.equal(r.exitCode, null);
    assert.match(r.output, /^Error: a toolgate policy denied the call fake-sh-\d+ \(GuardDenied\): Recursive rm/);
    const d = await sb.delete(`${ws}/src`); // BaseSandbox's delete is an rm -rf through sh
    assert.match(d.error, /GuardDenied/);
    assert.equal((await sb.read(`${ws}/src/main.go`)).content, "package main // a.b");
  });

  test("a call parked for approval: an error at once, naming toolgate approve", async () => {
    const mark = gw.calls.length;
    const r = await sb.execute("wget -q -O- http://example.com/");
    assert.equal(r.exitCode, null);
    assert.match(r.output, /awaits human approval and has not run/);
    assert.match(r.output, /toolgate approve fake-sh-\d+ -n fake/);
    assert.match(r.output, /a person must approve it first/);
    assert.deepEqual(since(mark), ["sh"]);
  });

  test("approvalWaitMs: the parked call is called again until the bound", async () => {
    const waiting = new ToolgateSandbox(sb.client, { session: sb.id, root: ws, approvalWaitMs: 250, approvalPollMs: 100 });
    const mark = gw.calls.length;
    const r = await waiting.execute("wget -q -O- http://example.com/");
    assert.match(r.output, /awaits human approval/);
    const tools = since(mark);
    assert.ok(tools.length >= 2 && tools.length <= 4, `${tools.length} calls`);
  });

  test("a session key of the caller's own", async () => {
    const own = new ToolgateSandbox(sb.client, { session: "task-42", root: ws });
    assert.equal(own.id, "task-42");
    await own.execute("true");
    assert.equal(gw.calls.at(-1).session, "task-42");
  });

  test("a tool the gateway does not serve", async () => {
    const other = new ToolgateSandbox(sb.client, { root: ws, tools: { sh: "bash" } });
    const r = await other.execute("true");
    assert.deepEqual([r.exitCode, r.output], [null, "Error: the toolgate gateway serves no tool bash; nothing was run."]);
  });
});

describe("ToolgateSandbox on a gateway serving only sh", () => {
  let gw, sb;
  before(async () => {
    gw = await startFakeGateway({ tools: ["sh"] });
    sb = await ToolgateSandbox.connect({ url: gw.url, root: gw.root });
  });
  after(async () => {
    await sb.close();
    await gw.close();
  });

  test("the file operations fall back to BaseSandbox's, through sh", async () => {
    const ws = gw.root;
    assert.equal((await sb.write(`${ws}/x/a.txt`, "hello\nworld\n")).error, undefined);
    const read = await sb.read(`${ws}/x/a.txt`);
    assert.match(String(read.content), /hello/);
    assert.equal((await sb.edit(`${ws}/x/a.txt`, "world", "there")).error, undefined);
    const grep = await sb.grep("there", ws);
    assert.deepEqual(
      grep.matches.map((m) => [m.path, m.line]),
      [[`${ws}/x/a.txt`, 2]],
    );
    assert.ok(gw.calls.length > 0 && gw.calls.every((c) => c.tool === "sh"));
  });
});

test("quoteMeta quotes RE2's metacharacters", () => {
  assert.equal(quoteMeta("a.b*(c)|[d]{e}^$\\+?"), "a\\.b\\*\\(c\\)\\|\\[d\\]\\{e\\}\\^\\$\\\\\\+\\?");
});

test("deepagents' agent loop with a scripted model (test/agent-loop.mjs) on the fake gateway", async () => {
  const gw = await startFakeGateway({ token: TOKEN });
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [join(here, "agent-loop.mjs")], {
      env: { ...process.env, TOOLGATE_URL: gw.url, TOOLGATE_TOKEN: TOKEN, TOOLGATE_ROOT: gw.root },
      timeout: 120_000,
    }).catch((err) => assert.fail(`agent-loop exited ${err.code}: ${err.stdout}\n${err.stderr}`));
    const summary = JSON.parse(stdout.trim().split("\n").pop());
    assert.equal(summary.ok, true, JSON.stringify(summary.failures));
    const want = ["write_file", "sh", "read_file", "edit_file", "sh", "grep", "list", "list", "sh", "sh", "read_file"];
    assert.deepEqual(
      gw.calls.map((c) => c.tool),
      want,
      "every step of the agent is one tools/call",
    );
    assert.ok(gw.calls.every((c) => c.session === summary.session));
    assert.deepEqual(
      summary.calls.map((c) => c.call),
      gw.calls.map((c) => c.call),
    );
    assert.deepEqual(
      gw.calls.map((c) => c.phase),
      ["Succeeded", "Succeeded", "Succeeded", "Succeeded", "Succeeded", "Succeeded", "Succeeded", "Succeeded", "Failed", "Denied", "Succeeded"],
    );
  } finally {
    await gw.close();
  }
});
