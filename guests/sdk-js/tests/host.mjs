// Runs @wonopcode/guest on Node, outside a component, for its unit tests: each
// `wonopcode:agent-loop/IFACE@VERSION` import is a module whose functions are those of
// wonopcode's `wit/IFACE.wit` (camelCase, as componentize-js names them), each answering
// through `globalThis.wonopcodeHost[IFACE][name]`, which a test sets. A function the WIT
// does not have is no export, so the SDK calling one fails its import as in a component.
// Use: node --import ./tests/host.mjs --test tests/
import { register } from 'node:module';

register('./wit-hooks.mjs', import.meta.url);
globalThis.wonopcodeHost = {};
