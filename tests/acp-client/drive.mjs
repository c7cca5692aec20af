// Drives `wonopcode acp` with the official ACP TypeScript client, the way an editor does:
// initialize, a session in a folder, then each prompt of a scenario, answering permission
// requests as the scenario says and cancelling a prompt when it asks. Every line on the
// wire, both ways, is written to WIRE (JSON Lines, `{"from": "client"|"agent", "message"}`),
// for the test to check against the protocol's schema; what the client saw is printed on
// stdout as one JSON object.
//
//   node drive.mjs SCENARIO.json WIRE.jsonl -- wonopcode acp [FLAGS]
//
// SCENARIO: {"cwd": DIR, "prompts": [{"prompt": [ContentBlock], "cancelAfterUpdate": N?,
//                                     "leaveAfterUpdate": N?, "overlapAfterUpdate": N?,
//                                     "cancelAfterOverlap": true?}],
//            "permission": "allow_once" | "allow_always" | "reject_once" | "reject_always"
//                          | "cancel",
//            "mcpServers": [McpServer]?, "mode": MODE_ID?,
//            "load": SESSION_ID?, "resume": SESSION_ID?, "list": true?, "close": true?,
//            "options": [{"configId": ID, "value": VALUE}]?,
//            "buffers": {PATH: TEXT}?, "swap": {"dir": DIR, "link": TARGET}?}
//
// `load` and `resume` open a kept session instead of a new one (the updates its load sends
// are in `loadUpdates`); `list` lists the sessions first (`listed`); `close` closes the
// session after the prompts; `options` are set before the prompts (each answer, or its
// error, in `optionsSet`); `buffers` makes the client offer its file system, answering
// reads from those open buffers (else the disk) and keeping writes in them, not on disk
// (each read and write in `fsReads`, `fsWrites`); `leaveAfterUpdate` ends the connection in the middle of that
// prompt, as an editor that quits does; `swap` plays a sibling racing the editor: around
// each by-name read or write of a path inside `dir`, `dir` is swapped for a link to
// `link` and back, and a write lands on disk; `overlapAfterUpdate` sends the prompt again while it
// runs (the answer, or the error, in `overlap`; `cancelAfterOverlap` cancels once it is in).

import { spawn } from "node:child_process";
import {
  appendFileSync,
  readFileSync,
  existsSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [scenarioPath, wirePath, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--" || !command) {
  console.error("usage: node drive.mjs SCENARIO.json WIRE.jsonl -- COMMAND [ARGS]");
  process.exit(2);
}
const scenario = JSON.parse(readFileSync(scenarioPath, "utf8"));

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });

/** A byte stream whose lines are also written to WIRE as `from`'s messages. */
function recorded(from) {
  let pending = "";
  return new TransformStream({
    transform(chunk, controller) {
      pending += new TextDecoder().decode(chunk);
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim()) {
          appendFileSync(wirePath, JSON.stringify({ from, message: JSON.parse(line) }) + "\n");
        }
      }
      controller.enqueue(chunk);
    },
  });
}

const toAgent = recorded("client");
// The pipe ends when the connection does; its abort then is expected.
toAgent.readable.pipeTo(Writable.toWeb(agent.stdin)).catch(() => {});
const fromAgent = Readable.toWeb(agent.stdout).pipeThrough(recorded("agent"));
const stream = ndJsonStream(toAgent.writable, fromAgent);

const seen = { updates: [], permissions: [], stops: [], errors: [], fsReads: [], fsWrites: [] };
const buffers = { ...(scenario.buffers ?? {}) };
let onUpdate = () => {};
let cancel = async () => {};

const app = client({ name: "wonopcode-e2e" })
  .onNotification(methods.client.session.update, async ({ params }) => {
    seen.updates.push(params.update);
    onUpdate(params.update);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    seen.permissions.push(params);
    if (scenario.permission === "cancel") {
      // The person cancels the turn instead of answering: the editor sends session/cancel
      // and answers the pending question as cancelled, as the protocol asks.
      seen.cancelledAt = Date.now();
      await cancel(params.sessionId);
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: scenario.permission ?? "reject_once" } };
  })
  .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    seen.fsReads.push(params.path);
    if (swapping(params.path)) {
      return { content: swapped(() => readFileSync(params.path, "utf8")) };
    }
    if (params.path in buffers) {
      return { content: buffers[params.path] };
    }
    if (!existsSync(params.path)) {
      throw new Error(`no file ${params.path}`);
    }
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
    seen.fsWrites.push({ path: params.path, content: params.content });
    if (swapping(params.path)) {
      swapped(() => writeFileSync(params.path, params.content));
      return {};
    }
    buffers[params.path] = params.content;
    return {};
  });

/** Whether `path` is inside the scenario's `swap.dir`. */
function swapping(path) {
  return scenario.swap && path.startsWith(scenario.swap.dir + "/");
}

/** Runs `open` (a by-name access) with `swap.dir` swapped for a link, then swaps it back. */
function swapped(open) {
  const { dir, link } = scenario.swap;
  renameSync(dir, dir + ".away");
  symlinkSync(link, dir);
  try {
    return open();
  } finally {
    unlinkSync(dir);
    renameSync(dir + ".away", dir);
  }
}

await app.connectWith(stream, async (ctx) => {
  seen.initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: scenario.buffers
      ? { fs: { readTextFile: true, writeTextFile: true } }
      : {},
  });
  if (scenario.list) {
    seen.listed = await ctx.request(methods.agent.session.list, { cwd: scenario.cwd });
  }
  cancel = async (sessionId) => ctx.notify(methods.agent.session.cancel, { sessionId });
  const opening = { cwd: scenario.cwd, mcpServers: scenario.mcpServers ?? [] };
  let session;
  if (scenario.load || scenario.resume) {
    const sessionId = scenario.load ?? scenario.resume;
    const method = scenario.load ? methods.agent.session.load : methods.agent.session.resume;
    try {
      session = { sessionId, ...(await ctx.request(method, { ...opening, sessionId })) };
    } catch (error) {
      seen.loadError = String(error?.message ?? error) + " " + JSON.stringify(error?.data ?? null);
      return;
    }
    seen.loadUpdates = seen.updates;
    seen.updates = [];
  } else {
    session = await ctx.request(methods.agent.session.new, opening);
  }
  seen.sessionId = session.sessionId;
  seen.modes = session.modes;
  seen.configOptions = session.configOptions;
  seen.optionsSet = [];
  for (const option of scenario.options ?? []) {
    try {
      seen.optionsSet.push(
        await ctx.request(methods.agent.session.setConfigOption, {
          sessionId: session.sessionId,
          ...option,
        }),
      );
    } catch (error) {
      seen.optionsSet.push({ error: String(error?.message ?? error) + " " + JSON.stringify(error?.data ?? null) });
    }
  }
  if (scenario.mode) {
    await ctx.request(methods.agent.session.setMode, {
      sessionId: session.sessionId,
      modeId: scenario.mode,
    });
  }
  for (const turn of scenario.prompts) {
    let updates = 0;
    let leave;
    const left = new Promise((resolve) => (leave = resolve));
    onUpdate = (update) => {
      // The commands the session offers come when it opens, not as the turn goes.
      if (update.sessionUpdate === "available_commands_update") {
        return;
      }
      updates += 1;
      if (turn.overlapAfterUpdate !== undefined && updates === turn.overlapAfterUpdate) {
        // A second prompt while this one runs: refused, this one goes on.
        seen.overlap = ctx
          .request(methods.agent.session.prompt, { sessionId: session.sessionId, prompt: turn.prompt })
          .then((r) => ({ answered: r }))
          .catch((e) => ({ error: String(e?.message ?? e) + " " + JSON.stringify(e?.data ?? null) }))
          .then((outcome) => {
            if (turn.cancelAfterOverlap) {
              seen.cancelledAt = Date.now();
              ctx.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
            }
            return outcome;
          });
      }
      if (turn.cancelAfterUpdate !== undefined && updates === turn.cancelAfterUpdate) {
        seen.cancelledAt = Date.now();
        ctx.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
      }
      if (turn.leaveAfterUpdate !== undefined && updates === turn.leaveAfterUpdate) {
        leave();
      }
    };
    if (turn.leaveAfterUpdate !== undefined) {
      // The editor goes away mid-turn: its end of the connection closes, nothing answered.
      ctx.request(methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: turn.prompt,
      }).catch(() => {});
      await left;
      seen.left = true;
      return;
    }
    try {
      const response = await ctx.request(methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: turn.prompt,
      });
      if (seen.cancelledAt !== undefined) {
        seen.cancelMs = Date.now() - seen.cancelledAt;
      }
      seen.stops.push(response.stopReason);
    } catch (error) {
      seen.errors.push(String(error?.message ?? error) + " " + JSON.stringify(error?.data ?? null));
    }
  }
  if (seen.overlap) {
    seen.overlap = await seen.overlap;
  }
  if (scenario.close) {
    seen.closed = await ctx.request(methods.agent.session.close, { sessionId: session.sessionId });
  }
  // A prompt for a session that does not exist is refused, not fatal.
  try {
    await ctx.request(methods.agent.session.prompt, {
      sessionId: "no-such-session",
      prompt: [{ type: "text", text: "hi" }],
    });
  } catch (error) {
    seen.unknownSession = String(error?.message ?? error) + " " + JSON.stringify(error?.data ?? null);
  }
});

if (!agent.stdin.destroyed) {
  agent.stdin.end();
}
const code = await new Promise((resolve) => agent.on("exit", resolve));
seen.exitCode = code;
process.stdout.write(JSON.stringify(seen) + "\n");
