// deepagents' own agent loop (createDeepAgent) on toolgate as its sandbox backend, driven by
// a scripted chat model (@langchain/core/testing's fakeModel): a multi-step coding task
// whose every step is a tool call of the agent, and so a tools/call of the gateway, a
// ToolCall. It writes a script, runs it, reads it back, edits it, runs it again, searches
// and lists the workspace, runs a failing command, has a recursive rm denied by the demo's
// Guard policy (config/examples/policies.yaml), and reads the output file after all that.
//
// Environment: TOOLGATE_URL (the gateway's streamable HTTP endpoint), TOOLGATE_TOKEN (a
// bearer token, optional), TOOLGATE_SESSION (the session key; default a random one),
// TOOLGATE_ROOT (the workspace's mount path; default /workspace).
// Prints one JSON line: {ok, session, steps: [{tool, ok, output}], calls: [the sandbox's
// CallRecords], failures}; exits 1 when a step's result is not what the task expects.
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { createDeepAgent } from "deepagents";

import { ToolgateSandbox } from "../dist/index.js";

const url = process.env.TOOLGATE_URL;
if (!url) {
  console.error("agent-loop: set TOOLGATE_URL (and TOOLGATE_TOKEN)");
  process.exit(2);
}
const root = (process.env.TOOLGATE_ROOT || "/workspace").replace(/\/+$/, "");
const app = `${root}/app`;

// The task, one tool call per model turn, with what its result must show.
const steps = [
  {
    call: { name: "write_file", args: { file_path: `${app}/greet.sh`, content: '#!/bin/sh\necho "hello, $1"\n' } },
    expect: [`Successfully wrote to '${app}/greet.sh'`],
  },
  { call: { name: "execute", args: { command: `sh ${app}/greet.sh toolgate` } }, expect: ["hello, toolgate", "exit code 0"] },
  { call: { name: "read_file", args: { file_path: `${app}/greet.sh` } }, expect: ['echo "hello, $1"', "lines 1-2"] },
  {
    call: { name: "edit_file", args: { file_path: `${app}/greet.sh`, old_string: "hello", new_string: "good morning" } },
    expect: ["Successfully replaced 1 occurrence(s)"],
  },
  {
    call: { name: "execute", args: { command: `sh ${app}/greet.sh toolgate > ${app}/out.txt && cat ${app}/out.txt` } },
    expect: ["good morning, toolgate", "exit code 0"],
  },
  { call: { name: "grep", args: { pattern: "good morning", path: root } }, expect: [`${app}/greet.sh`, `${app}/out.txt`] },
  { call: { name: "glob", args: { pattern: "**/*.txt", path: root } }, expect: [`${app}/out.txt`], absent: ["greet.sh"] },
  { call: { name: "ls", args: { path: app } }, expect: [`${app}/greet.sh`, `${app}/out.txt`] },
  { call: { name: "execute", args: { command: `cat ${app}/nope.txt` } }, expect: ["[Command failed with exit code 1]"] },
  { call: { name: "execute", args: { command: `rm -rf ${app}` } }, expect: ["Error: a toolgate policy denied the call", "(GuardDenied)"] },
  { call: { name: "read_file", args: { file_path: `${app}/out.txt` } }, expect: ["good morning, toolgate"] },
];

const model = fakeModel();
for (const s of steps) model.respondWithTools([s.call]);
model.respond(new AIMessage("Done: greet.sh says good morning."));

const sandbox = await ToolgateSandbox.connect({
  url,
  token: process.env.TOOLGATE_TOKEN || undefined,
  session: process.env.TOOLGATE_SESSION || undefined,
  root,
});
const summary = { ok: false, session: sandbox.id, steps: [], calls: sandbox.calls, failures: [] };
try {
  const agent = createDeepAgent({
    model,
    backend: sandbox,
    systemPrompt: `You work in a toolgate sandbox; your files are under ${root}.`,
  });
  const result = await agent.invoke(
    { messages: [new HumanMessage("Write a greeting script, run it, make it say good morning, and check the workspace.")] },
    { recursionLimit: 100 },
  );
  const toolMessages = result.messages.filter((m) => ToolMessage.isInstance(m));
  steps.forEach((s, i) => {
    const m = toolMessages[i];
    const output = m ? textOf(m.content) : "";
    const missing = (s.expect ?? []).filter((e) => !output.includes(e));
    const extra = (s.absent ?? []).filter((e) => output.includes(e));
    const ok = m !== undefined && m.name === s.call.name && missing.length === 0 && extra.length === 0;
    summary.steps.push({ tool: s.call.name, ok, output: output.slice(0, 2000) });
    if (!ok) summary.failures.push(`step ${i + 1} ${s.call.name}: missing ${JSON.stringify(missing)}, unexpected ${JSON.stringify(extra)}, got ${m?.name}`);
  });
  if (toolMessages.length !== steps.length) summary.failures.push(`${toolMessages.length} tool messages, want ${steps.length}`);
  const last = result.messages[result.messages.length - 1];
  if (!AIMessage.isInstance(last) || !String(last.content).startsWith("Done")) summary.failures.push("the run did not end with the model's answer");
  summary.ok = summary.failures.length === 0;
} catch (err) {
  summary.failures.push(`the agent failed: ${err?.stack ?? err}`);
} finally {
  await sandbox.close();
}
console.log(JSON.stringify(summary));

// textOf is a tool message's text: a string, or its text blocks (read_file answers with blocks).
function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b) => (b?.type === "text" ? b.text : JSON.stringify(b))).join("\n");
  return JSON.stringify(content);
}
process.exit(summary.ok ? 0 : 1);
