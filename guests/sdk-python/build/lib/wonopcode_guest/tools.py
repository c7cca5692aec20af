"""Custom tools: plain functions whose type hints are their JSON Schema. The host offers them
to the model beside its own; the SDK runs the calls the model makes to them, after the host
has checked the arguments against the schema, and shows each call on screen."""

from __future__ import annotations

import inspect
import json
import types
import typing
from typing import Any, Callable, Dict, List, Tuple

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(hint: Any) -> Dict[str, Any]:
    """The JSON Schema of one parameter's type hint."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return _schema_of(inner[0]) if len(inner) == 1 else {}
    if origin in (list, List):
        return {"type": "array", "items": _schema_of(args[0]) if args else {}}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    return {}


def schema_of(function: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON Schema of `function`'s keyword arguments: a parameter without a default is
    required."""
    hints = typing.get_type_hints(function)
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for name, parameter in inspect.signature(function).parameters.items():
        properties[name] = _schema_of(hints.get(name, Any))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


class Tools:
    """A loop's custom tools, by name."""

    def __init__(self) -> None:
        self._tools: Dict[str, Tuple[Callable[..., Any], str, Dict[str, Any]]] = {}

    def tool(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: `function` is a tool named after it, described by its docstring, whose
        arguments are its parameters (their type hints make the schema). It returns the text
        the model reads; an exception is a failed call, its message what the model reads."""
        description = inspect.getdoc(function) or function.__name__
        self._tools[function.__name__] = (function, description, schema_of(function))
        return function

    def names(self) -> List[str]:
        """The tools' names."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def register(self) -> None:
        """Registers every tool with the host for this context (`on_start` does)."""
        from wit_world.imports import custom_tools

        for name, (_, description, schema) in self._tools.items():
            custom_tools.register_tool(
                custom_tools.CustomToolDefinition(
                    id=name,
                    name=name,
                    description=description,
                    parameters_schema=json.dumps(schema),
                    enabled_by_default=True,
                )
            )

    def dispatch(self, name: str, arguments: str) -> Tuple[str, bool]:
        """Runs a call once the host has checked its arguments; (what the model reads,
        whether the call failed)."""
        from componentize_py_types import Err
        from wit_world.imports import custom_tools

        if name not in self._tools:
            return f"no custom tool `{name}`", True
        try:
            custom_tools.check_arguments(name, arguments)
        except Err as refused:
            return str(refused.value), True
        function = self._tools[name][0]
        try:
            kwargs = json.loads(arguments) if arguments.strip() else {}
            return str(function(**kwargs)), False
        except Exception as failed:  # the tool's own failure is the model's to read
            return f"{type(failed).__name__}: {failed}", True

    def run_shown(self, call_id: str, name: str, arguments: str) -> Tuple[str, bool]:
        """`dispatch`, shown as a tool call (`ui.tool-start`, `ui.tool-result`)."""
        from wit_world.imports import ui

        ui.tool_start(call_id, name)
        content, is_error = self.dispatch(name, arguments)
        ui.tool_result(call_id, content, is_error)
        return content, is_error
