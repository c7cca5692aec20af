// The standard loop written on the raw imports of WIT 0.2.11, as JavaScript guests were before
// @wonopcode/guest: built against the host's frozen snapshot (`wit/since_v0_2/`), it proves
// that a 0.2 guest built with componentize-js keeps running on the 0.3 host. It streams each
// turn from the stored history, runs the calls on the host in parallel, and stops at the
// first answer. Records are objects with camelCase fields, variants `{tag, val}`.

import { readStreamChunk, streamHistory } from 'wonopcode:agent-loop/providers@0.2.11';
import { addMessage, addStreamedMessage, compactIfNeeded } from 'wonopcode:agent-loop/storage@0.2.11';
import { executeToolsParallel, getEnabledTools } from 'wonopcode:agent-loop/tools@0.2.11';
import { isCancelled } from 'wonopcode:agent-loop/system@0.2.11';

// Model turns a prompt may take.
const MAX_ROUNDS = 20;

const OPTIONS = { maxTokens: undefined, temperature: undefined, thinkingBudget: undefined };

// Streams one turn from the stored history and collects it.
function streamTurn() {
  let handle;
  try {
    handle = streamHistory(getEnabledTools(), OPTIONS);
  } catch (e) {
    throw { tag: 'provider-error', val: String(e?.payload ?? e) };
  }
  const turn = { handle, text: '', calls: [], error: undefined };
  for (let chunk; (chunk = readStreamChunk(handle)) != null; ) {
    if (chunk.tag === 'text-delta') turn.text += chunk.val;
    else if (chunk.tag === 'tool-call-start')
      turn.calls.push({ id: chunk.val.id, name: chunk.val.name, arguments: '' });
    else if (chunk.tag === 'tool-call-delta') {
      const call = turn.calls.findLast((c) => c.id === chunk.val.id);
      if (call) call.arguments += chunk.val.argumentsDelta;
    } else if (chunk.tag === 'error') turn.error = chunk.val;
  }
  return turn;
}

function runPrompt(prompt) {
  addMessage({ role: 'user', content: prompt, toolCalls: undefined, toolResults: undefined });
  for (let round = 0; round < MAX_ROUNDS; round++) {
    if (isCancelled()) throw { tag: 'cancelled' };
    compactIfNeeded();
    const turn = streamTurn();
    addStreamedMessage(turn.handle);
    if (turn.error !== undefined) throw { tag: 'provider-error', val: turn.error };
    if (turn.calls.length === 0) return turn.text;
    const results = executeToolsParallel(turn.calls);
    addMessage({
      role: 'tool',
      content: '',
      toolCalls: undefined,
      toolResults: results.map((r) => ({ callId: r.callId, content: r.content, isError: !r.success })),
    });
  }
  throw { tag: 'internal', val: `no answer after ${MAX_ROUNDS} rounds of tool use` };
}

export const agentLoop = {
  runPrompt,
  onStart() {},
  onComplete(_result) {},
  onCancel() {},
  getName: () => 'js-v0-2',
  getCapabilities: () => ({
    streaming: true,
    extendedThinking: false,
    parallelTools: true,
    toolObservation: true,
    maxContext: 0,
    autoCompaction: true,
    supportsSubContexts: false,
    supportsCustomTools: false,
  }),
};

export const customToolHandler = {
  handleToolCall(toolId, _arguments) {
    throw `js-v0-2 has no custom tool \`${toolId}\``;
  },
};
