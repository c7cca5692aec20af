// Builds a guest on @wonopcode/guest into a component with componentize-js. componentize-js
// reads one source tree and resolves only relative imports, so the build stages the
// author's directory with this package beside it (`@wonopcode/guest` rewritten to its
// relative path) and componentizes that. Usage, in a project's build.mjs:
//
//   import { build } from '@wonopcode/guest/build';
//   await build({ source: 'agent.js', wit: 'wit', out: 'my-loop.wasm' });

import { componentize } from '@bytecodealliance/componentize-js';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const SDK_DIR = '.wonopcode-guest';

/** Copies `from` into `to`, leaving out node_modules and the staging directories. */
async function copyTree(from, to) {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.wonopcode')) continue;
    const [a, b] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory()) await copyTree(a, b);
    else if (entry.isFile()) await cp(a, b);
  }
}

/** Rewrites the `@wonopcode/guest` imports of every .js file under `dir` (at `depth` below
 * the staging root) to the staged package. */
async function rewrite(dir, root) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== SDK_DIR) await rewrite(path, root);
    else if (entry.isFile() && /\.m?js$/.test(entry.name)) {
      let to = relative(dir, join(root, SDK_DIR, 'index.js'));
      if (!to.startsWith('.')) to = `./${to}`;
      const text = await readFile(path, 'utf8');
      const out = text.replace(/(from\s+|import\s*\(\s*)(['"])@wonopcode\/guest\2/g, `$1$2${to}$2`);
      if (out !== text) await writeFile(path, out);
    }
  }
}

/** Builds `source` (relative to the current directory) against `wit` into `out`. */
export async function build({ source, wit = 'wit', out, world = 'agent-loop-world' }) {
  const sourcePath = resolve(source);
  const project = dirname(sourcePath);
  const stage = await mkdtemp(join(project, '.wonopcode-build-'));
  try {
    await copyTree(project, stage);
    await mkdir(join(stage, SDK_DIR), { recursive: true });
    await cp(join(here, 'index.js'), join(stage, SDK_DIR, 'index.js'));
    await rewrite(stage, stage);
    const { component } = await componentize({
      sourcePath: join(stage, basename(sourcePath)),
      witPath: resolve(wit),
      worldName: world,
      // The host gives guests stdio, clocks and random through WASI, and no network.
      disableFeatures: ['http', 'fetch-event'],
    });
    await writeFile(resolve(out), component);
    console.log(`built ${out}`);
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}
