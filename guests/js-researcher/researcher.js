// A researcher specialist written in JavaScript on @wonopcode/guest: answers questions about
// the workspace with the host's read-only tools (read, glob, grep, list), and returns the
// files it read to its parent as data: {"files_read": ["..."]}.
//
// Built with the SDK's build against `wit/` (build.mjs). The host runs each round of tool
// calls; the files come from the stored history afterwards (`storage.getMessages`): each
// `read` call whose result is not an error.

import { Agent, exportLoop, keepOnlyTools, setResultData, storage } from '@wonopcode/guest';

// Read-only tools: a researcher never writes, whatever its parent allowed it.
const TOOLS = ['read', 'glob', 'grep', 'list'];

// Model turns a question may take.
const MAX_ROUNDS = 20;

// The path a `read` call asked for.
function readPath(call) {
  try {
    const path = JSON.parse(call.arguments).path;
    return typeof path === 'string' ? path : undefined;
  } catch {
    return undefined;
  }
}

// The files this context's `read` calls read, in the order they were first read.
function filesRead(messages) {
  const failed = new Set(
    messages.flatMap((m) => m.toolResults ?? []).filter((r) => r.isError).map((r) => r.callId),
  );
  const files = messages
    .flatMap((m) => m.toolCalls ?? [])
    .filter((c) => c.name === 'read' && !failed.has(c.id))
    .map(readPath)
    .filter((path) => path !== undefined);
  return [...new Set(files)];
}

export const { agentLoop, customToolHandler } = exportLoop({
  name: 'js-researcher',
  runPrompt(question) {
    keepOnlyTools(...TOOLS);
    const answer = new Agent({ maxRounds: MAX_ROUNDS }).run(question);
    setResultData({ files_read: filesRead(storage.getMessages()) });
    return answer;
  },
});
