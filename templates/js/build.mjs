// Builds {{name}}.wasm from agent.js with componentize-js (bindings generated from wit/),
// staged with the SDK in vendor/ by the SDK's own build.
import { build } from './vendor/wonopcode-guest/build.js';

await build({ source: 'agent.js', wit: 'wit', out: '{{name}}.wasm' });
