"""The standard loop: a model turn from the stored history (`providers.run-turn`), its tool
calls run (the host's by the host in one round, the guest's own here), until the model
answers. The rules of a run (iterations, the doom-loop check, budgets, suspension) are the
host's."""

from __future__ import annotations

from typing import List, Optional, Sequence

from .tools import Tools


class Agent:
    """The standard loop over this context's enabled tools, narrowed to `offered` when given;
    `tools` are the loop's custom tools."""

    def __init__(
        self,
        tools: Optional[Tools] = None,
        offered: Optional[Sequence[str]] = None,
        max_rounds: Optional[int] = None,
    ) -> None:
        self.tools = tools
        self.offered = list(offered) if offered is not None else None
        self.max_rounds = max_rounds

    def run(self, prompt: str) -> str:
        """Adds `prompt` to the history and runs to the model's answer."""
        from wit_world.imports import providers, storage

        storage.add_message(
            providers.Message(
                role=providers.MessageRole.USER, content=prompt, tool_calls=None, tool_results=None
            )
        )
        return self.resume()

    def resume(self) -> str:
        """Runs from the history as it stands to the model's answer."""
        from componentize_py_types import Err
        from wit_world.imports import providers, storage, system, tools, types

        options = providers.StreamOptions(max_tokens=None, temperature=None, thinking_budget=None)
        rounds = 0
        while self.max_rounds is None or rounds < self.max_rounds:
            rounds += 1
            try:
                turn = providers.run_turn(self._offered(), options)
            except Err as refused:
                raise Err(_stopped(types.LoopError_ProviderError(str(refused.value))))
            if turn.error is not None:
                raise Err(_stopped(types.LoopError_ProviderError(turn.error)))
            if not turn.tool_calls:
                return turn.text
            mine = self.tools
            if mine is None or not any(c.name in mine for c in turn.tool_calls):
                try:
                    tools.run_tool_round(turn.handle)
                except Err as refused:
                    raise Err(types.LoopError_ToolError(str(refused.value)))
                continue
            storage.add_message(
                providers.Message(
                    role=providers.MessageRole.TOOL,
                    content="",
                    tool_calls=None,
                    tool_results=_mixed(mine, turn.tool_calls),
                )
            )
        if system.is_cancelled():
            raise Err(types.LoopError_Cancelled())
        raise Err(types.LoopError_Internal(f"no answer after {rounds} rounds of tool use"))

    def _offered(self) -> List[str]:
        from wit_world.imports import tools

        enabled = tools.get_enabled_tools()
        if self.offered is None:
            return enabled
        return [t for t in enabled if t in self.offered]


def keep_only_tools(*names: str) -> List[str]:
    """Narrows this context's enabled tools to those of `names` it has, and returns them: a
    specialist keeps to its trade (a reviewer never writes) whatever its parent allowed it.
    Raises `LoopFailed` with the host's line when the host refuses."""
    from componentize_py_types import Err
    from wit_world.imports import tools

    from .loop import LoopFailed

    kept = [t for t in tools.get_enabled_tools() if t in names]
    try:
        tools.set_enabled_tools(kept)
    except Err as refused:
        raise LoopFailed(str(refused.value)) from None
    return kept


def _stopped(error):
    """`error`, or `cancelled` when the run was cancelled (which is why a turn failed)."""
    from wit_world.imports import system, types

    return types.LoopError_Cancelled() if system.is_cancelled() else error


def _mixed(mine: Tools, calls) -> list:
    """Runs a turn's calls when some are the guest's own: those here, the rest on the host in
    parallel; results in the order of the calls."""
    from wit_world.imports import providers, tools

    on_host = [
        tools.ToolExecutionRequest(id=c.id, name=c.name, arguments=c.arguments)
        for c in calls
        if c.name not in mine
    ]
    host_results = iter(tools.execute_tools_parallel(on_host))
    results = []
    for call in calls:
        if call.name in mine:
            content, is_error = mine.run_shown(call.id, call.name, call.arguments)
        else:
            done = next(host_results, None)
            content = done.content if done is not None else "the host returned no result"
            is_error = done is None or not done.success
        results.append(providers.ToolResult(call_id=call.id, content=content, is_error=is_error))
    return results
