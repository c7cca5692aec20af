"""Delegation: a child context (a specialist loop, an agent, this guest again, a file) from
one `spawn-request`, built with defaults that keep the parent's settings."""

from __future__ import annotations

import json
from typing import Any, List, Optional, Sequence, Union

from .tiers import Tier, tier_model


class SpawnFailed(Exception):
    """The child could not start (a limit, an unknown module, a grant wider than the
    parent's, a setting its model cannot take); the message is the host's one line."""


class Spawn:
    """A child to start. `Spawn.named("coder", task).allow("read", "edit").tier(Tier.STRONG)
    .run()` runs it to its answer; `.start()` returns a handle that lives on."""

    def __init__(self, module: Any, task: str) -> None:
        from wit_world.imports import context

        self.request = context.SpawnRequest(
            module=module,
            task=task,
            system_prompt=None,
            allowed_tools=None,
            denied_tools=None,
            preferred_provider=None,
            preferred_model=None,
            max_iterations=None,
            max_tokens=None,
            timeout_ms=None,
            inherit_messages=False,
            custom_data=None,
            grants=context.ContextGrants(
                sandbox=None, write=[], read=[], network=[], max_processes=None, max_cost_usd=None
            ),
            generation=context.ContextGeneration(
                thinking=None, max_output_tokens=None, temperature=None
            ),
            attachments=[],
            extensions=[],
        )

    @classmethod
    def named(cls, name: str, task: str) -> "Spawn":
        """A loop or agent the host's registry knows by `name`."""
        from wit_world.imports import context

        return cls(context.ContextModule_Named(name), task)

    @classmethod
    def same(cls, task: str) -> "Spawn":
        """A fresh instance of this guest (tell the roles apart by `custom_data`)."""
        from wit_world.imports import context

        return cls(context.ContextModule_Same(), task)

    @classmethod
    def path(cls, path: str, task: str) -> "Spawn":
        """A component file, relative to the workspace."""
        from wit_world.imports import context

        return cls(context.ContextModule_Path(path), task)

    def allow(self, *tools: str) -> "Spawn":
        """Only these of the parent's tools."""
        self.request.allowed_tools = list(tools)
        return self

    def deny(self, *tools: str) -> "Spawn":
        """None of these tools."""
        self.request.denied_tools = list(tools)
        return self

    def model(self, model: str, provider: Optional[str] = None) -> "Spawn":
        """The model (and provider) the child asks for."""
        self.request.preferred_model = model
        self.request.preferred_provider = provider
        return self

    def tier(self, tier: Tier) -> "Spawn":
        """The current provider's model of `tier`; the parent's model when it has none."""
        model = tier_model(tier)
        if model is not None:
            self.request.preferred_model = model
        return self

    def system_prompt(self, prompt: str) -> "Spawn":
        """The child's system prompt."""
        self.request.system_prompt = prompt
        return self

    def limits(
        self,
        max_iterations: Optional[int] = None,
        max_tokens: Optional[int] = None,
        timeout_ms: Optional[int] = None,
    ) -> "Spawn":
        """Model requests per turn, tokens (its descendants' included), wall time per turn."""
        self.request.max_iterations = max_iterations
        self.request.max_tokens = max_tokens
        self.request.timeout_ms = timeout_ms
        return self

    def custom_data(self, data: Union[str, Any]) -> "Spawn":
        """What the child reads with `spawn_request()` (a value not a string goes as JSON)."""
        self.request.custom_data = data if isinstance(data, str) else json.dumps(data)
        return self

    def inherit_messages(self) -> "Spawn":
        """Starts the child with a copy of this context's history."""
        self.request.inherit_messages = True
        return self

    def grants(self, sandbox: Optional[str] = None, max_cost_usd: Optional[float] = None,
               write: Sequence[str] = (), read: Sequence[str] = (),
               network: Sequence[str] = (), max_processes: Optional[int] = None) -> "Spawn":
        """A narrower sandbox and a cost limit (wider than the parent's refuses the spawn)."""
        from wit_world.imports import context

        self.request.grants = context.ContextGrants(
            sandbox=sandbox, write=list(write), read=list(read), network=list(network),
            max_processes=max_processes, max_cost_usd=max_cost_usd,
        )
        return self

    def generation(self, thinking: Optional[str] = None, temperature: Optional[float] = None,
                   max_output_tokens: Optional[int] = None) -> "Spawn":
        """How the child's model generates (`thinking`: off, low, medium, high or tokens)."""
        from wit_world.imports import context

        self.request.generation = context.ContextGeneration(
            thinking=thinking, max_output_tokens=max_output_tokens, temperature=temperature
        )
        return self

    def attach(self, attachments: List[Any]) -> "Spawn":
        """Images and PDFs (`storage.Attachment`) in the child's first task message."""
        self.request.attachments = list(attachments)
        return self

    def run(self):
        """Runs the child to its answer: its `context-result`. Raises `SpawnFailed`."""
        from componentize_py_types import Err
        from wit_world.imports import context

        try:
            return context.spawn(self.request)
        except Err as refused:
            raise SpawnFailed(str(refused.value)) from None

    def start(self):
        """Starts the child and returns its handle (`wait`, `send`, `fork`, `cancel`)."""
        from componentize_py_types import Err
        from wit_world.imports import context

        try:
            return context.start(self.request)
        except Err as refused:
            raise SpawnFailed(str(refused.value)) from None


def spawn_all(children: Sequence[Spawn], max_concurrent: Optional[int] = None) -> list:
    """Runs `children` concurrently (at most `max_concurrent` at once) and waits for all;
    one entry each, in order: its `context-result`, or a `SpawnFailed` when it could not
    start."""
    from componentize_py_types import Ok
    from wit_world.imports import context

    return [
        outcome.value if isinstance(outcome, Ok) else SpawnFailed(str(outcome.value))
        for outcome in context.spawn_parallel([c.request for c in children], max_concurrent)
    ]


# The state key whose value a child's result carries as its `data`.
RESULT_DATA_KEY = "__result_data__"


def set_result_data(data: Union[str, Any]) -> None:
    """Gives the parent structured data: this context's result carries it as `data` (a value
    not a string goes as JSON)."""
    from wit_world.imports import storage

    storage.set_state(RESULT_DATA_KEY, data if isinstance(data, str) else json.dumps(data))


def spawn_request():
    """The request this context was started with (None for the root)."""
    from wit_world.imports import context

    return context.get_spawn_request()


def status_text(status: Any) -> str:
    """A child's status in one word, with its text where it has one."""
    name = type(status).__name__.split("_", 1)[-1]
    words = {
        "Completed": "completed",
        "Cancelled": "cancelled",
        "MaxIterationsReached": "max_iterations_reached",
        "TokenLimitReached": "token_limit_reached",
        "Timeout": "timeout",
        "Error": "error",
        "Suspended": "suspended",
        "BudgetExceeded": "budget_exceeded",
    }
    word = words.get(name, name.lower())
    text = getattr(status, "value", None)
    return f"{word}: {text}" if text else word


def spent(result: Any) -> str:
    """What a child spent, in one line: `1,300 input + 80 output tokens, $0.0051`."""
    usage = result.usage
    cost = (
        f"${usage.total_cost_microcents / 1e8:.4f}"
        if usage.total_cost_microcents is not None
        else "cost unknown"
    )
    return f"{usage.input_tokens:,} input + {usage.output_tokens:,} output tokens, {cost}"


def describe(result: Any) -> str:
    """A child's result as text a model can read: status, answer, data, changed files."""
    out = f"status: {status_text(result.status)}\n"
    if result.response:
        out += f"answer:\n{result.response}\n"
    if result.data is not None:
        out += f"data: {result.data}\n"
    if result.modified_files:
        out += f"modified files: {', '.join(result.modified_files)}\n"
    return out
