"""An orchestrator in Python on the wonopcode-guest SDK. A prompt that starts with "team:"
goes to two specialists at once, each a fresh instance of this component playing the role
its request names (`custom_data`): a researcher on the provider's fast model with `read` and
`grep`, and a counter on the strong model with a tool of its own (`word_count`, run in the
guest). The lead answers with both results. Any other prompt gets the standard loop, with
`word_count` offered."""

from wonopcode_guest import Agent, Loop, Spawn, Tier, Tools, describe, export, spawn_all, spawn_request

tools = Tools()


@tools.tool
def word_count(text: str) -> str:
    """Counts the words of a text."""
    return str(len(text.split()))


class Orchestrator(Loop):
    name = "py-orchestrator"

    def run_prompt(self, prompt: str) -> str:
        request = spawn_request()
        role = request.custom_data if request else None
        if role == "researcher":
            return Agent().run(prompt)
        if role == "counter":
            return Agent(tools=tools).run(prompt)
        if prompt.startswith("team:"):
            task = prompt.removeprefix("team:").strip()
            researcher = Spawn.same(task).custom_data("researcher").allow("read", "grep").tier(Tier.FAST)
            counter = Spawn.same(task).custom_data("counter").allow().tier(Tier.STRONG)
            results = spawn_all([researcher, counter])
            return "\n".join(describe(r) if not isinstance(r, Exception) else f"failed: {r}" for r in results)
        return Agent(tools=tools).run(prompt)


AgentLoop, CustomToolHandler = export(Orchestrator(tools))
