"""The standard loop written on the raw bindings of WIT 0.2.11, as Python guests were before
the SDK: built against the host's frozen snapshot (`wit/since_v0_2/`), it proves that a 0.2
guest built with componentize-py keeps running on the 0.3 host. It streams each turn from the
stored history, runs the calls on the host in parallel, and stops at the first answer."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import providers, storage, system, tools, types

# Model turns a prompt may take.
MAX_ROUNDS = 20

OPTIONS = providers.StreamOptions(max_tokens=None, temperature=None, thinking_budget=None)


def stream_turn():
    """Streams one turn from the stored history; returns (handle, text, calls, error)."""
    try:
        handle = providers.stream_history(tools.get_enabled_tools(), OPTIONS)
    except Err as refused:
        raise Err(types.LoopError_ProviderError(str(refused.value)))
    text, calls, error = [], [], None
    while (chunk := providers.read_stream_chunk(handle)) is not None:
        if isinstance(chunk, providers.StreamChunk_TextDelta):
            text.append(chunk.value)
        elif isinstance(chunk, providers.StreamChunk_ToolCallStart):
            calls.append([chunk.value.id, chunk.value.name, ""])
        elif isinstance(chunk, providers.StreamChunk_ToolCallDelta):
            for call in reversed(calls):
                if call[0] == chunk.value.id:
                    call[2] += chunk.value.arguments_delta
                    break
        elif isinstance(chunk, providers.StreamChunk_Error):
            error = chunk.value
    return handle, "".join(text), calls, error


class AgentLoop(exports.AgentLoop):
    def run_prompt(self, input):
        storage.add_message(
            providers.Message(
                role=providers.MessageRole.USER, content=input, tool_calls=None, tool_results=None
            )
        )
        for _ in range(MAX_ROUNDS):
            if system.is_cancelled():
                raise Err(types.LoopError_Cancelled())
            storage.compact_if_needed()
            handle, text, calls, error = stream_turn()
            storage.add_streamed_message(handle)
            if error is not None:
                raise Err(types.LoopError_ProviderError(error))
            if not calls:
                return text
            requests = [tools.ToolExecutionRequest(id=i, name=n, arguments=a) for i, n, a in calls]
            results = [
                providers.ToolResult(call_id=r.call_id, content=r.content, is_error=not r.success)
                for r in tools.execute_tools_parallel(requests)
            ]
            storage.add_message(
                providers.Message(
                    role=providers.MessageRole.TOOL, content="", tool_calls=None, tool_results=results
                )
            )
        raise Err(types.LoopError_Internal(f"no answer after {MAX_ROUNDS} rounds of tool use"))

    def on_start(self):
        pass

    def on_complete(self, result):
        pass

    def on_cancel(self):
        pass

    def get_name(self):
        return "python-v0-2"

    def get_capabilities(self):
        return types.LoopCapabilities(
            streaming=True,
            extended_thinking=False,
            parallel_tools=True,
            tool_observation=True,
            max_context=0,
            auto_compaction=True,
            supports_sub_contexts=False,
            supports_custom_tools=False,
        )


class CustomToolHandler(exports.CustomToolHandler):
    def handle_tool_call(self, tool_id, arguments):
        raise Err(f"python-v0-2 has no custom tool `{tool_id}`")
