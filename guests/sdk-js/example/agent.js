// An orchestrator in JavaScript on @wonopcode/guest: the standard loop with a tool of its
// own (`word_count`), and a research question handed to the `researcher` specialist on the
// provider's fast model when the prompt starts with "research:".
import { Agent, Spawn, Tier, Tools, describe, exportLoop } from '@wonopcode/guest';

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
    if (prompt.startsWith('research:')) {
      const question = prompt.slice('research:'.length).trim();
      return describe(Spawn.named('researcher', question).allow('read', 'grep').tier(Tier.FAST).run());
    }
    return new Agent({ tools }).run(prompt);
  },
});
