// {{name}}: a wonopcode hook. Before a `bash` call it refuses commands containing a phrase
// of its settings' `deny` list; everywhere else it has no say.
//
// Build: npm install && node build.mjs
// Use: name {{name}}.wasm in a hook entry (see README.md).

// The phrases a command may not contain (the instance lives for the whole run).
let deny = ['rm -rf /'];

export const handler = {
  configure(settings) {
    const value = JSON.parse(settings);
    const list = value?.deny ?? deny;
    if (!Array.isArray(list) || !list.every((p) => typeof p === 'string')) {
      throw '`deny` must be a list of strings';
    }
    deny = list;
  },

  beforeTool(site, call) {
    let command = '';
    try {
      command = JSON.parse(call.arguments).command ?? '';
    } catch {}
    const phrase = deny.find((p) => call.name === 'bash' && command.includes(p));
    if (phrase !== undefined) {
      return {
        verdict: { tag: 'deny', val: `commands containing \`${phrase}\` are not allowed` },
        arguments: undefined,
      };
    }
    return { verdict: { tag: 'pass' }, arguments: undefined };
  },

  permissionRequest(site, call) {
    return { tag: 'pass' };
  },

  afterTool(site, call, output, isError) {
    return undefined;
  },

  onTurn(site, event) {
    return { block: undefined, context: undefined };
  },
};
