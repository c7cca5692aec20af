"""An orchestrator in Python on the wonopcode-guest SDK: it answers with the standard loop,
offers its model a tool of its own (`word_count`), and hands a question to the `researcher`
specialist on the provider's fast model when the prompt starts with "research:"."""

from wonopcode_guest import Agent, Loop, Spawn, Tier, Tools, describe, export

tools = Tools()


@tools.tool
def word_count(text: str) -> str:
    """Counts the words of a text."""
    return str(len(text.split()))


class Orchestrator(Loop):
    name = "py-orchestrator"

    def run_prompt(self, prompt: str) -> str:
        if prompt.startswith("research:"):
            question = prompt.removeprefix("research:").strip()
            result = Spawn.named("researcher", question).allow("read", "grep").tier(Tier.FAST).run()
            return describe(result)
        return Agent(tools=tools).run(prompt)


AgentLoop, CustomToolHandler = export(Orchestrator(tools))
