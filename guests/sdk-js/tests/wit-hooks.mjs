// The module hooks behind host.mjs: resolve `wonopcode:agent-loop/IFACE@…`, and load it as
// the functions `wit/IFACE.wit` declares.
import { readFileSync } from 'node:fs';

const WIT = new URL('../../../wit/', import.meta.url);
const PREFIX = 'wonopcode:agent-loop/';

export async function resolve(specifier, context, next) {
  if (specifier.startsWith(PREFIX)) {
    const iface = specifier.slice(PREFIX.length).split('@')[0];
    return { url: `wonopcode-wit:${iface}`, shortCircuit: true };
  }
  return next(specifier, context);
}

const camel = (name) => name.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());

export async function load(url, context, next) {
  if (!url.startsWith('wonopcode-wit:')) return next(url, context);
  const iface = url.slice('wonopcode-wit:'.length);
  const wit = readFileSync(new URL(`${iface}.wit`, WIT), 'utf8');
  // Free functions of the interface: `name: func(` at the interface's own indentation.
  const names = [...wit.matchAll(/^ {4}([a-z][a-z0-9-]*): func\(/gm)].map((m) => camel(m[1]));
  const lines = names.map(
    (n) =>
      `export const ${n} = (...args) => { const f = globalThis.wonopcodeHost[${JSON.stringify(iface)}]?.[${JSON.stringify(n)}]; ` +
      `if (!f) throw new Error('the test gives no answer for ${iface}.${n}'); return f(...args); };`,
  );
  return { format: 'module', source: lines.join('\n'), shortCircuit: true };
}
