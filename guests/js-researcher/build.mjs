// Builds the JavaScript guests into components:
// - researcher.js, a guest on @wonopcode/guest (this folder's dependency on ../sdk-js), with
//   the SDK's own build against the host's WIT (`wit/`), as an author builds one;
// - test-guests/standard-v0-2.js, a guest of WIT 0.2 (its imports name 0.2.11), built against
//   the host's frozen 0.2 snapshot: it proves that 0.2 guests keep running on a 0.3 host;
// - two broken guests the tests feed to `--validate-module`: one that lacks the
//   `custom-tool-handler` export, one built against an incompatible WIT version (0.4.0).
// componentize-js is used through its JavaScript API: the jco 1.35 command line bundles an
// older componentize-js that cannot read a WIT directory here.
// Usage: node --preserve-symlinks build.mjs [OUT_DIR]   (default: ../../target/polyglot)
// (npm links the SDK into node_modules; --preserve-symlinks lets the SDK's build find this
// folder's componentize-js, as it does where npm installs the SDK from its tarball.)
import { componentize } from '@bytecodealliance/componentize-js';
import { build as buildOnSdk } from '@wonopcode/guest/build';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wit = resolve(here, '../../wit');
const witV02 = resolve(here, '../../wit/since_v0_2');
const outDir = resolve(process.argv[2] ?? resolve(here, '../../target/polyglot'));

// The host gives guests stdio, clocks and random through WASI, and no network.
const disableFeatures = ['http', 'fetch-event'];

async function build(sourcePath, witPath, worldName, out) {
  const { component } = await componentize({ sourcePath, witPath, worldName, disableFeatures });
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, component);
  console.log(`built ${out}`);
}

// The version of the WIT package it is built against, as its files declare it.
const current = (await readFile(join(wit, 'agent-loop.wit'), 'utf8')).match(
  /package wonopcode:agent-loop@([0-9.]+);/,
)[1];

// A WIT directory with `world` as its own package and wonopcode's interfaces as a dependency,
// their version replaced by `version` when given.
async function witWith(world, version) {
  const dir = await mkdtemp(join(tmpdir(), 'wonopcode-wit-'));
  const dep = join(dir, 'deps', 'agent-loop');
  await mkdir(dep, { recursive: true });
  for (const name of await readdir(wit)) {
    if (!name.endsWith('.wit') || name === 'world.wit') continue;
    let text = await readFile(join(wit, name), 'utf8');
    if (version) text = text.replaceAll(`@${current}`, `@${version}`);
    await writeFile(join(dep, name), text);
  }
  await writeFile(join(dir, 'world.wit'), world);
  return dir;
}

await buildOnSdk({
  source: join(here, 'researcher.js'),
  wit,
  out: join(outDir, 'js-researcher.wasm'),
});
await build(
  join(here, 'test-guests', 'standard-v0-2.js'),
  witV02,
  'agent-loop-world',
  join(outDir, 'js-v0-2.wasm'),
);

const bad = join(outDir, 'bad');
const missing = await witWith(`package wonopcode:bad-guests;
world agent-loop-only {
  import wonopcode:agent-loop/providers@${current};
  export wonopcode:agent-loop/agent-loop@${current};
}
`);
const version = await witWith(
  `package wonopcode:bad-guests;
world agent-loop-world {
  import wonopcode:agent-loop/providers@0.4.0;
  export wonopcode:agent-loop/agent-loop@0.4.0;
  export wonopcode:agent-loop/custom-tool-handler@0.4.0;
}
`,
  '0.4.0',
);
try {
  const minimal = join(here, 'test-guests', 'minimal.js');
  await build(minimal, missing, 'agent-loop-only', join(bad, 'js-missing-export.wasm'));
  const both = join(here, 'test-guests', 'minimal-with-handler.js');
  await build(both, version, 'agent-loop-world', join(bad, 'js-version-0-4.wasm'));
} finally {
  await rm(missing, { recursive: true, force: true });
  await rm(version, { recursive: true, force: true });
}
