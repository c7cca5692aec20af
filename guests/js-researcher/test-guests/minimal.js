// A guest that only exports `agent-loop` (built against a world without
// `custom-tool-handler`): `--validate-module` must name the missing export.
export const agentLoop = {
  runPrompt(input) {
    return `echo: ${input}`;
  },
  onStart() {},
  onComplete(_result) {},
  onCancel() {},
  getName() {
    return 'js-minimal';
  },
  getCapabilities() {
    return {
      streaming: false,
      extendedThinking: false,
      parallelTools: false,
      toolObservation: false,
      maxContext: 0,
      autoCompaction: false,
      supportsSubContexts: false,
      supportsCustomTools: false,
    };
  },
};
