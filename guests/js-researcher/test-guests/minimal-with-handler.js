// The minimal guest with both exports, built against WIT 0.3.0 (incompatible with the
// host's 0.2): `--validate-module` must name both versions.
export { agentLoop } from './minimal.js';

export const customToolHandler = {
  handleToolCall(toolId, _arguments) {
    throw `no custom tool \`${toolId}\``;
  },
};
