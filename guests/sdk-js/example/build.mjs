// Builds js-orchestrator.wasm from agent.js (the SDK's build stages it with the SDK).
import { build } from '@wonopcode/guest/build';

await build({ source: 'agent.js', wit: 'wit', out: 'js-orchestrator.wasm' });
