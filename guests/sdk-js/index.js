// @wonopcode/guest: wonopcode agent loops in JavaScript. The loop is an object with a name
// and a runPrompt; `Agent` is the standard loop, `tools()` registers tools of the loop's own
// (their calls checked by the host and shown on screen), `Spawn` hands work to a child
// context. The WIT version lives here, not in an author's code. Types: index.d.ts.

import * as context from 'wonopcode:agent-loop/context@0.3.0';
import * as customTools from 'wonopcode:agent-loop/custom-tools@0.3.0';
import * as providers from 'wonopcode:agent-loop/providers@0.3.0';
import * as storage from 'wonopcode:agent-loop/storage@0.3.0';
import * as system from 'wonopcode:agent-loop/system@0.3.0';
import * as hostTools from 'wonopcode:agent-loop/tools@0.3.0';
import * as ui from 'wonopcode:agent-loop/ui@0.3.0';

export { context, customTools, providers, storage, system, hostTools, ui };

/** The text of a host call's error (componentize-js throws `{ payload }`). */
const reason = (e) => String(e && e.payload !== undefined ? e.payload : e);

/** Thrown from runPrompt to end the turn with one line. */
export class LoopFailed extends Error {}

/** Thrown by `Spawn.run`/`start` when the child could not start: the host's line. */
export class SpawnFailed extends Error {}

/** A loop's custom tools, by name. */
export class Tools {
  constructor() {
    this.byName = new Map();
  }

  /** Adds a tool: `{ name, description, parameters, run }`; `parameters` maps each argument
   * to `'string' | 'number' | 'integer' | 'boolean'` (a trailing `?` makes it optional) or
   * is a whole JSON Schema object (`{ type: 'object', ... }`). `run(args)` returns the text
   * the model reads; a throw is a failed call. */
  tool(spec) {
    this.byName.set(spec.name, { ...spec, schema: schemaOf(spec.parameters ?? {}) });
    return this;
  }

  has(name) {
    return this.byName.has(name);
  }

  /** Registers every tool with the host for this context. */
  register() {
    for (const [name, t] of this.byName) {
      customTools.registerTool({
        id: name,
        name,
        description: t.description ?? name,
        parametersSchema: JSON.stringify(t.schema),
        enabledByDefault: true,
      });
    }
  }

  /** Runs a call once the host has checked its arguments: [content, isError]. */
  dispatch(name, args) {
    const t = this.byName.get(name);
    if (!t) return [`no custom tool \`${name}\``, true];
    try {
      customTools.checkArguments(name, args);
    } catch (e) {
      return [reason(e), true];
    }
    try {
      return [String(t.run(args.trim() ? JSON.parse(args) : {})), false];
    } catch (e) {
      return [String(e && e.message !== undefined ? e.message : e), true];
    }
  }

  /** `dispatch`, shown as a tool call. */
  runShown(call) {
    ui.toolStart(call.id, call.name);
    const [content, isError] = this.dispatch(call.name, call.arguments);
    ui.toolResult(call.id, content, isError);
    return [content, isError];
  }
}

/** The JSON Schema of a tool's `parameters`. */
function schemaOf(parameters) {
  if (parameters.type === 'object') return parameters;
  const properties = {};
  const required = [];
  for (const [name, kind] of Object.entries(parameters)) {
    const optional = kind.endsWith('?');
    properties[name] = { type: optional ? kind.slice(0, -1) : kind };
    if (!optional) required.push(name);
  }
  return { type: 'object', properties, required };
}

/** The standard loop over this context's enabled tools (narrowed to `offered`), with the
 * loop's own `tools`. */
export class Agent {
  constructor({ tools, offered, maxRounds } = {}) {
    this.tools = tools;
    this.offered = offered;
    this.maxRounds = maxRounds;
  }

  /** Adds `prompt` to the history and runs to the model's answer. */
  run(prompt) {
    storage.addMessage({
      role: 'user',
      content: prompt,
      toolCalls: undefined,
      toolResults: undefined,
    });
    return this.resume();
  }

  /** Runs from the history as it stands to the model's answer. */
  resume() {
    const options = { maxTokens: undefined, temperature: undefined, thinkingBudget: undefined };
    let rounds = 0;
    while (this.maxRounds === undefined || rounds < this.maxRounds) {
      rounds += 1;
      let turn;
      try {
        turn = providers.runTurn(this.#offeredTools(), options);
      } catch (e) {
        throw stopped({ tag: 'provider-error', val: reason(e) });
      }
      if (turn.error !== undefined) throw stopped({ tag: 'provider-error', val: turn.error });
      if (turn.toolCalls.length === 0) return turn.text;
      const mine = this.tools;
      if (!mine || !turn.toolCalls.some((c) => mine.has(c.name))) {
        try {
          hostTools.runToolRound(turn.handle);
        } catch (e) {
          throw { tag: 'tool-error', val: reason(e) };
        }
        continue;
      }
      storage.addMessage({
        role: 'tool',
        content: '',
        toolCalls: undefined,
        toolResults: mixed(mine, turn.toolCalls),
      });
    }
    throw { tag: 'internal', val: `no answer after ${rounds} rounds of tool use` };
  }

  #offeredTools() {
    const enabled = hostTools.getEnabledTools();
    return this.offered ? enabled.filter((t) => this.offered.includes(t)) : enabled;
  }
}

/** Narrows this context's enabled tools to those of `names` it has, and returns them: a
 * specialist keeps to its trade (a reviewer never writes) whatever its parent allowed it.
 * Throws LoopFailed with the host's line when the host refuses. */
export function keepOnlyTools(...names) {
  const kept = hostTools.getEnabledTools().filter((t) => names.includes(t));
  try {
    hostTools.setEnabledTools(kept);
  } catch (e) {
    throw new LoopFailed(reason(e));
  }
  return kept;
}

/** `error`, or `cancelled` when the run was cancelled (which is why a turn failed). */
function stopped(error) {
  return system.isCancelled() ? { tag: 'cancelled' } : error;
}

/** A turn's calls when some are the loop's own: those here, the rest on the host. */
function mixed(mine, calls) {
  const onHost = calls
    .filter((c) => !mine.has(c.name))
    .map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  const hostResults = hostTools.executeToolsParallel(onHost);
  let next = 0;
  return calls.map((call) => {
    if (mine.has(call.name)) {
      const [content, isError] = mine.runShown(call);
      return { callId: call.id, content, isError };
    }
    const done = hostResults[next++];
    return done
      ? { callId: call.id, content: done.content, isError: !done.success }
      : { callId: call.id, content: 'the host returned no result', isError: true };
  });
}

/** Which tier of model a kind of work needs. */
export const Tier = Object.freeze({ FAST: 0, STRONG: 1, DEEP: 2 });

/** Each known provider's model of each tier (fast, strong, deep), as the Rust SDK's. */
export const TIERS = Object.freeze({
  anthropic: ['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-opus-4-5'],
  openai: ['gpt-5-mini', 'gpt-5', 'gpt-5'],
  deepseek: ['deepseek-chat', 'deepseek-chat', 'deepseek-reasoner'],
});

/** The current provider's model of `tier`, when it has tiers and the host can open it. */
export function tierModel(tier) {
  const provider = providers.getCurrentProvider();
  const model = provider && TIERS[provider] ? TIERS[provider][tier] : undefined;
  if (!model) return undefined;
  const openable = providers
    .listProviders()
    .some((p) => p.id === provider && p.models.includes(model));
  return openable ? model : undefined;
}

/** A child to start: `Spawn.named('coder', task).allow('read').tier(Tier.STRONG).run()`. */
export class Spawn {
  constructor(module, task) {
    this.request = {
      module,
      task,
      systemPrompt: undefined,
      allowedTools: undefined,
      deniedTools: undefined,
      preferredProvider: undefined,
      preferredModel: undefined,
      maxIterations: undefined,
      maxTokens: undefined,
      timeoutMs: undefined,
      inheritMessages: false,
      customData: undefined,
      grants: {
        sandbox: undefined,
        write: [],
        read: [],
        network: [],
        maxProcesses: undefined,
        maxCostUsd: undefined,
      },
      generation: { thinking: undefined, maxOutputTokens: undefined, temperature: undefined },
      attachments: [],
      extensions: [],
    };
  }
  /** A loop or agent the host's registry knows by name. */
  static named(name, task) {
    return new Spawn({ tag: 'named', val: name }, task);
  }
  /** A fresh instance of this guest. */
  static same(task) {
    return new Spawn({ tag: 'same' }, task);
  }
  /** A component file, relative to the workspace. */
  static path(path, task) {
    return new Spawn({ tag: 'path', val: path }, task);
  }
  allow(...tools) {
    this.request.allowedTools = tools;
    return this;
  }
  deny(...tools) {
    this.request.deniedTools = tools;
    return this;
  }
  model(model, provider) {
    this.request.preferredModel = model;
    this.request.preferredProvider = provider;
    return this;
  }
  tier(tier) {
    const model = tierModel(tier);
    if (model) this.request.preferredModel = model;
    return this;
  }
  systemPrompt(prompt) {
    this.request.systemPrompt = prompt;
    return this;
  }
  /** Model requests per turn, tokens (its descendants' included), wall time per turn. */
  limits({ maxIterations, maxTokens, timeoutMs } = {}) {
    const big = (n) => (n === undefined ? undefined : BigInt(n));
    Object.assign(this.request, { maxIterations, maxTokens: big(maxTokens), timeoutMs: big(timeoutMs) });
    return this;
  }
  customData(data) {
    this.request.customData = typeof data === 'string' ? data : JSON.stringify(data);
    return this;
  }
  inheritMessages() {
    this.request.inheritMessages = true;
    return this;
  }
  grants(grants) {
    this.request.grants = { ...this.request.grants, ...grants };
    return this;
  }
  generation(generation) {
    this.request.generation = { ...this.request.generation, ...generation };
    return this;
  }
  attach(attachments) {
    this.request.attachments = attachments;
    return this;
  }
  /** Runs the child to its answer (its context-result); throws SpawnFailed. */
  run() {
    try {
      return context.spawn(this.request);
    } catch (e) {
      throw new SpawnFailed(reason(e));
    }
  }
  /** Starts the child and returns its handle (wait, send, fork, cancel). */
  start() {
    try {
      return context.start(this.request);
    } catch (e) {
      throw new SpawnFailed(reason(e));
    }
  }
}

/** Runs the children concurrently; per child its result, or a SpawnFailed. */
export function spawnAll(children, maxConcurrent) {
  return context
    .spawnParallel(
      children.map((c) => c.request),
      maxConcurrent,
    )
    .map((r) => (r.tag === 'ok' ? r.val : new SpawnFailed(String(r.val))));
}

/** The state key whose value a child's result carries as its `data`. */
export const RESULT_DATA_KEY = '__result_data__';

/** Gives the parent structured data: this context's result carries it as `data` (a value not
 * a string goes as JSON). */
export function setResultData(data) {
  storage.setState(RESULT_DATA_KEY, typeof data === 'string' ? data : JSON.stringify(data));
}

/** The request this context was started with (undefined for the root). */
export function spawnRequest() {
  return context.getSpawnRequest();
}

/** A child's status in one word, with its text where it has one. */
export function statusText(status) {
  const word = status.tag.replaceAll('-', '_');
  return status.val !== undefined ? `${word}: ${status.val}` : word;
}

/** What a child spent, in one line. */
export function spent(result) {
  const u = result.usage;
  const cost =
    u.totalCostMicrocents !== undefined
      ? `$${(Number(u.totalCostMicrocents) / 1e8).toFixed(4)}`
      : 'cost unknown';
  return `${u.inputTokens.toLocaleString('en-US')} input + ${u.outputTokens.toLocaleString('en-US')} output tokens, ${cost}`;
}

/** A child's result as text a model can read. */
export function describe(result) {
  let out = `status: ${statusText(result.status)}\n`;
  if (result.response) out += `answer:\n${result.response}\n`;
  if (result.data !== undefined) out += `data: ${result.data}\n`;
  if (result.modifiedFiles.length) out += `modified files: ${result.modifiedFiles.join(', ')}\n`;
  return out;
}

/** The exports componentize-js looks for, serving `loop` (`{ name, runPrompt, tools }`):
 * `export const { agentLoop, customToolHandler } = exportLoop(myLoop);`. */
export function exportLoop(loop) {
  const guarded = (call) => {
    try {
      return call();
    } catch (e) {
      if (e instanceof Error) throw { tag: 'internal', val: e.message };
      throw e;
    }
  };
  const agentLoop = {
    runPrompt: (input) =>
      guarded(() =>
        loop.runPrompt ? loop.runPrompt(input) : new Agent({ tools: loop.tools }).run(input),
      ),
    onStart: () => guarded(() => loop.tools?.register()),
    onComplete: () => {},
    onCancel: () => {},
    getName: () => loop.name,
    getCapabilities: () => ({
      streaming: true,
      extendedThinking: true,
      parallelTools: true,
      toolObservation: true,
      maxContext: 0,
      autoCompaction: true,
      supportsSubContexts: true,
      supportsCustomTools: Boolean(loop.tools),
    }),
  };
  const customToolHandler = {
    handleToolCall(toolId, args) {
      if (!loop.tools) throw `${loop.name} has no custom tool \`${toolId}\``;
      const [content, isError] = loop.tools.dispatch(toolId, args);
      if (isError) throw content;
      return content;
    },
  };
  return { agentLoop, customToolHandler };
}
