// Builds {{name}}.wasm from agent.js with componentize-js (bindings generated from wit/).
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { component } = await componentize({
  sourcePath: join(here, 'agent.js'),
  witPath: join(here, 'wit'),
  worldName: 'agent-loop-world',
  // The host gives guests stdio, clocks and random through WASI, and no network.
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile(join(here, '{{name}}.wasm'), component);
console.log('built {{name}}.wasm');
