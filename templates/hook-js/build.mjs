// Builds {{name}}.wasm from hook.js with componentize-js (bindings generated from wit/).
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { component } = await componentize({
  sourcePath: join(here, 'hook.js'),
  witPath: join(here, 'wit'),
  worldName: 'hook',
  // A hook gets WASI with nothing granted unless its entry says so, and no network.
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile(join(here, '{{name}}.wasm'), component);
console.log('built {{name}}.wasm');
