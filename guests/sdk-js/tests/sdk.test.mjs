// Unit tests of @wonopcode/guest on Node (host.mjs stands in for the host's imports, with
// exactly the functions wonopcode's WIT declares). Run from guests/sdk-js:
//   node --import ./tests/host.mjs --test tests/
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import {
  Agent,
  Spawn,
  SpawnFailed,
  Tier,
  Tools,
  describe,
  exportLoop,
  keepOnlyTools,
  setResultData,
  spawnAll,
  spent,
  statusText,
} from '../index.js';

const host = globalThis.wonopcodeHost;
beforeEach(() => {
  for (const key of Object.keys(host)) delete host[key];
});

const result = (status, extra = {}) => ({
  response: 'done',
  data: undefined,
  usage: { inputTokens: 1300n, outputTokens: 80n, totalCostMicrocents: 510000n },
  status,
  modifiedFiles: ['a.txt'],
  durationMs: 5n,
  ...extra,
});

test('a request has the parent’s defaults and what was set', () => {
  const { request } = Spawn.named('coder', 'fix it')
    .allow('read', 'edit')
    .deny('bash')
    .customData({ role: 'fixer' })
    .limits({ maxIterations: 3, maxTokens: 100, timeoutMs: 1000 })
    .generation({ temperature: 0.3 })
    .grants({ sandbox: 'read-only', maxCostUsd: 0.5 });
  assert.deepEqual(request.module, { tag: 'named', val: 'coder' });
  assert.deepEqual(request.allowedTools, ['read', 'edit']);
  assert.deepEqual(request.deniedTools, ['bash']);
  assert.deepEqual(JSON.parse(request.customData), { role: 'fixer' });
  // u64 fields are BigInts, as componentize-js lowers them.
  assert.equal(request.maxTokens, 100n);
  assert.equal(request.timeoutMs, 1000n);
  assert.equal(request.generation.temperature, 0.3);
  assert.equal(request.generation.thinking, undefined);
  assert.equal(request.grants.sandbox, 'read-only');
  assert.deepEqual(request.grants.write, []);
  const same = Spawn.same('again').request;
  assert.deepEqual(same.module, { tag: 'same' });
  assert.equal(same.preferredModel, undefined);
  assert.deepEqual(same.extensions, []);
});

test('a tier is the provider’s model only where the host can open it', () => {
  host.providers = {
    getCurrentProvider: () => 'anthropic',
    listProviders: () => [{ id: 'anthropic', models: ['claude-haiku-4-5'] }],
  };
  assert.equal(Spawn.same('t').tier(Tier.FAST).request.preferredModel, 'claude-haiku-4-5');
  assert.equal(Spawn.same('t').tier(Tier.STRONG).request.preferredModel, undefined);
  host.providers.getCurrentProvider = () => 'someone-else';
  assert.equal(Spawn.same('t').tier(Tier.FAST).request.preferredModel, undefined);
});

test('a batch keeps each child’s settings and says which could not start', () => {
  const asked = [];
  host.context = {
    spawnParallel: (requests, max) => {
      asked.push([requests, max]);
      return [
        { tag: 'ok', val: result({ tag: 'completed' }) },
        { tag: 'err', val: 'depth 9 is past the limit of 8' },
      ];
    },
  };
  const out = spawnAll([Spawn.same('a').generation({ temperature: 0.3 }), Spawn.same('b')], 2);
  assert.equal(asked.length, 1);
  const [[requests, max]] = asked;
  assert.equal(max, 2);
  assert.equal(requests[0].generation.temperature, 0.3);
  assert.deepEqual(requests.map((r) => r.task), ['a', 'b']);
  assert.equal(out[0].response, 'done');
  assert.ok(out[1] instanceof SpawnFailed);
  assert.equal(out[1].message, 'depth 9 is past the limit of 8');
});

test('a child that cannot start throws the host’s line', () => {
  host.context = {
    spawn: () => {
      throw { payload: 'unknown module `codr`; did you mean `coder`?' };
    },
  };
  assert.throws(() => Spawn.named('codr', 't').run(), {
    name: 'Error',
    message: 'unknown module `codr`; did you mean `coder`?',
  });
  assert.throws(() => Spawn.named('codr', 't').run(), SpawnFailed);
});

test('a result reads as text with its status and spend', () => {
  const done = result({ tag: 'completed' }, { data: '{"verdict": "approve"}' });
  assert.equal(
    describe(done),
    'status: completed\nanswer:\ndone\ndata: {"verdict": "approve"}\nmodified files: a.txt\n',
  );
  assert.equal(spent(done), '1,300 input + 80 output tokens, $0.0051');
  assert.equal(statusText({ tag: 'error', val: 'it broke' }), 'error: it broke');
  assert.equal(statusText({ tag: 'max-iterations-reached' }), 'max_iterations_reached');
});

test('a tool runs only once the host has checked its arguments, and is shown', () => {
  const ran = [];
  const tools = new Tools().tool({
    name: 'word_count',
    description: 'Counts the words of a text.',
    parameters: { text: 'string', limit: 'integer?' },
    run: ({ text }) => (ran.push(text), String(text.split(/\s+/).length)),
  });
  const registered = [];
  const shown = [];
  host['custom-tools'] = {
    registerTool: (d) => registered.push(d),
    checkArguments: (name, args) => {
      if (!JSON.parse(args).text) throw { payload: '`text` is required' };
    },
  };
  host.ui = {
    toolStart: (id, name) => shown.push(['start', id, name]),
    toolResult: (id, content, isError) => shown.push(['result', id, content, isError]),
  };
  tools.register();
  assert.equal(registered.length, 1);
  assert.equal(registered[0].id, 'word_count');
  assert.deepEqual(JSON.parse(registered[0].parametersSchema), {
    type: 'object',
    properties: { text: { type: 'string' }, limit: { type: 'integer' } },
    required: ['text'],
  });
  assert.deepEqual(tools.dispatch('word_count', '{"text": "one two"}'), ['2', false]);
  assert.deepEqual(tools.dispatch('word_count', '{}'), ['`text` is required', true]);
  assert.deepEqual(ran, ['one two']);
  assert.deepEqual(tools.dispatch('nope', '{}'), ['no custom tool `nope`', true]);
  tools.runShown({ id: 'c1', name: 'word_count', arguments: '{"text": "a"}' });
  assert.deepEqual(shown, [
    ['start', 'c1', 'word_count'],
    ['result', 'c1', '1', false],
  ]);
});

test('the standard loop asks the model until it answers, the host running each round', () => {
  const turns = [
    { handle: 1n, text: '', toolCalls: [{ id: 'c1', name: 'read', arguments: '{}' }] },
    { handle: 2n, text: 'It says hello.', toolCalls: [] },
  ];
  const rounds = [];
  const stored = [];
  host.storage = { addMessage: (m) => stored.push(m) };
  host.tools = { getEnabledTools: () => ['read'], runToolRound: (h) => (rounds.push(h), [true]) };
  host.providers = { runTurn: () => turns.shift() };
  host.system = { isCancelled: () => false };
  assert.equal(new Agent().run('what does a.txt say?'), 'It says hello.');
  assert.deepEqual(rounds, [1n]);
  assert.equal(stored[0].content, 'what does a.txt say?');
});

test('a thrown Error ends the turn as the loop error it names', () => {
  const { agentLoop } = exportLoop({
    name: 'x',
    runPrompt: () => {
      throw new Error('no specialist fits');
    },
  });
  assert.equal(agentLoop.getName(), 'x');
  assert.throws(() => agentLoop.runPrompt('hi'), (e) => e.tag === 'internal' && e.val === 'no specialist fits');
});

test('a specialist keeps only the tools of its trade it was given, and says why it cannot', () => {
  const set = [];
  host.tools = {
    getEnabledTools: () => ['bash', 'read', 'grep', 'edit'],
    setEnabledTools: (ids) => set.push(ids),
  };
  assert.deepEqual(keepOnlyTools('read', 'grep', 'list'), ['read', 'grep']);
  assert.deepEqual(set, [['read', 'grep']]);
  host.tools.setEnabledTools = () => {
    throw { payload: 'no tool `grep` here' };
  };
  assert.throws(() => keepOnlyTools('grep'), { name: 'Error', message: 'no tool `grep` here' });
});

test('result data goes to the parent as JSON under the key the host reads', () => {
  const state = new Map();
  host.storage = { setState: (k, v) => state.set(k, v) };
  setResultData({ verdict: 'approve', issues: [] });
  assert.equal(state.get('__result_data__'), '{"verdict":"approve","issues":[]}');
  setResultData('already json');
  assert.equal(state.get('__result_data__'), 'already json');
});
