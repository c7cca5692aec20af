"""{{name}}: a wonopcode agent loop on the wonopcode-guest SDK (vendored in vendor/). It runs
the standard loop: stream a model turn from the stored history, run the tool calls on the
host, and repeat until the model answers. Change `run_prompt` to decide which model to ask,
which tools to offer, and when to hand work to a specialist (`Spawn`); see wonopcode's
docs/guest-authoring.md.

Build: python3 -m pip install -r requirements.txt && sh build.sh
Check: wonopcode loops validate {{name}}.wasm
Test:  wonopcode loops test tests.yaml
"""

from wonopcode_guest import Agent, Loop, export


class Guest(Loop):
    name = "{{name}}"

    def run_prompt(self, prompt: str) -> str:
        return Agent().run(prompt)


AgentLoop, CustomToolHandler = export(Guest())
