// {{name}}: a wonopcode agent loop on @wonopcode/guest (vendored in vendor/). It runs the
// standard loop: stream a model turn from the stored history, run the tool calls on the
// host, and repeat until the model answers. Change `runPrompt` to decide which model to
// ask, which tools to offer, and when to hand work to a specialist (`Spawn`); see
// wonopcode's docs/guest-authoring.md.
//
// Build: npm install && node build.mjs
// Check: wonopcode loops validate {{name}}.wasm
// Test:  wonopcode loops test tests.yaml

import { Agent, exportLoop } from '@wonopcode/guest';

export const { agentLoop, customToolHandler } = exportLoop({
  name: '{{name}}',
  runPrompt: (prompt) => new Agent().run(prompt),
});
