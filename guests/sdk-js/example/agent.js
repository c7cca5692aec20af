// An orchestrator in JavaScript on @wonopcode/guest. A prompt that starts with "team:" goes
// to two specialists at once, each a fresh instance of this component playing the role its
// request names (`customData`): a researcher on the provider's fast model with `read` and
// `grep`, and a counter on the strong model with a tool of its own (`word_count`, run in the
// guest). The lead answers with both results. Any other prompt gets the standard loop, with
// `word_count` offered.
import { Agent, Spawn, Tier, Tools, describe, exportLoop, spawnAll, spawnRequest } from '@wonopcode/guest';

const tools = new Tools().tool({
  name: 'word_count',
  description: 'Counts the words of a text.',
  parameters: { text: 'string' },
  run: ({ text }) => String(text.split(/\s+/).filter(Boolean).length),
});

export const { agentLoop, customToolHandler } = exportLoop({
  name: 'js-orchestrator',
  tools,
  runPrompt(prompt) {
    const role = spawnRequest()?.customData;
    if (role === 'researcher') return new Agent().run(prompt);
    if (role === 'counter') return new Agent({ tools }).run(prompt);
    if (prompt.startsWith('team:')) {
      const task = prompt.slice('team:'.length).trim();
      const researcher = Spawn.same(task).customData('researcher').allow('read', 'grep').tier(Tier.FAST);
      const counter = Spawn.same(task).customData('counter').allow().tier(Tier.STRONG);
      return spawnAll([researcher, counter])
        .map((r) => (r instanceof Error ? `failed: ${r.message}` : describe(r)))
        .join('\n');
    }
    return new Agent({ tools }).run(prompt);
  },
});
