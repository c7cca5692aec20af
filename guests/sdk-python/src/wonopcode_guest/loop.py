"""A loop as a class, and the two export classes componentize-py looks for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from .tools import Tools


class LoopFailed(Exception):
    """Raise from `run_prompt` to end the turn with an error the person reads (one line)."""


class Loop:
    """An agent loop. Set `name`; override `run_prompt` (the default is the standard loop).

    `tools` are this loop's custom tools: registered with the host when an instance starts,
    run by the SDK when the model calls them (shown on screen as the host's own are).
    """

    name: str = "python-loop"

    def __init__(self, tools: Optional["Tools"] = None) -> None:
        self.tools = tools

    def run_prompt(self, prompt: str) -> str:
        """Runs one prompt to its answer."""
        from .agent import Agent

        return Agent(tools=self.tools).run(prompt)

    def resume(self) -> str:
        """Goes on with a suspended run from the history as it stands."""
        from .agent import Agent

        return Agent(tools=self.tools).resume()

    def on_start(self) -> None:
        """Called once per instance, before its first prompt: registers the custom tools."""
        if self.tools is not None:
            self.tools.register()

    def on_complete(self, answer: str) -> None:
        """Called after a turn that ended normally."""

    def on_cancel(self) -> None:
        """Called when the turn was cancelled."""


def export(loop: Loop):
    """The classes `AgentLoop` and `CustomToolHandler` that serve `loop`; assign them in the
    app module (`AgentLoop, CustomToolHandler = export(MyLoop())`), where componentize-py
    looks for them. `LoopFailed` becomes the WIT's `loop-error` and ends the turn with its
    message; any other exception traps the guest, and the run's error names its last line.
    """
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.imports import types

    def guarded(call):
        try:
            return call()
        except Err:
            raise
        except LoopFailed as failed:
            raise Err(types.LoopError_Internal(str(failed)))

    class AgentLoop(exports.AgentLoop):
        def run_prompt(self, input: str) -> str:
            return guarded(lambda: loop.run_prompt(input))

        def on_start(self) -> None:
            guarded(loop.on_start)

        def on_complete(self, result: str) -> None:
            guarded(lambda: loop.on_complete(result))

        def on_cancel(self) -> None:
            guarded(loop.on_cancel)

        def get_name(self) -> str:
            return loop.name

        def get_capabilities(self):
            return types.LoopCapabilities(
                streaming=True,
                extended_thinking=True,
                parallel_tools=True,
                tool_observation=True,
                max_context=0,
                auto_compaction=True,
                supports_sub_contexts=True,
                supports_custom_tools=loop.tools is not None,
            )

    class CustomToolHandler(exports.CustomToolHandler):
        def handle_tool_call(self, tool_id: str, arguments: str) -> str:
            if loop.tools is None:
                raise Err(f"{loop.name} has no custom tool `{tool_id}`")
            content, is_error = loop.tools.dispatch(tool_id, arguments)
            if is_error:
                raise Err(content)
            return content

    return AgentLoop, CustomToolHandler
