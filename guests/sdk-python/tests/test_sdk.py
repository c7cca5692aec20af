"""Unit tests of the wonopcode-guest SDK on the host (no component): the SDK is imported
over the bindings componentize-py writes for wonopcode's WIT (`componentize-py bindings`),
so every record it builds is the bindings' own dataclass with the WIT's fields; the host's
functions are replaced per test, as a component's host would answer them.

Run: `python3 -m unittest discover -s guests/sdk-python/tests` (componentize-py installed)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from typing import List, Literal, Optional
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BINDINGS = tempfile.mkdtemp(prefix="wonopcode-guest-bindings-")
subprocess.run(
    ["componentize-py", "-d", os.path.join(ROOT, "wit"), "-w", "agent-loop-world", "bindings", BINDINGS],
    check=True,
    capture_output=True,
)
sys.path[:0] = [BINDINGS, os.path.join(HERE, "..", "src")]

from componentize_py_types import Err, Ok  # noqa: E402
from wit_world.imports import context, custom_tools, providers, storage, tools  # noqa: E402

from wonopcode_guest import (  # noqa: E402
    Loop,
    LoopFailed,
    Spawn,
    SpawnFailed,
    Tier,
    Tools,
    describe,
    keep_only_tools,
    set_result_data,
    spawn_all,
    spent,
    status_text,
)
from wonopcode_guest import export  # noqa: E402
from wonopcode_guest.tools import schema_of  # noqa: E402
from wit_world.imports import types  # noqa: E402


def provider(id: str, models: List[str]) -> "providers.ProviderInfo":
    return providers.ProviderInfo(
        id=id, name=id, models=models, supports_streaming=True, supports_tools=True, supports_thinking=True
    )


def result(status, response: str = "done", data: Optional[str] = None) -> "context.ContextResult":
    return context.ContextResult(
        response=response,
        data=data,
        usage=context.TokenUsage(input_tokens=1300, output_tokens=80, total_cost_microcents=510_000),
        status=status,
        modified_files=["a.txt"],
        duration_ms=5,
    )


class SpawnRequests(unittest.TestCase):
    def test_a_request_has_the_parents_defaults_and_what_was_set(self):
        request = (
            Spawn.named("coder", "fix it")
            .allow("read", "edit")
            .deny("bash")
            .custom_data({"role": "fixer"})
            .limits(max_iterations=3, max_tokens=100, timeout_ms=1000)
            .generation(temperature=0.3, thinking="high")
            .grants(sandbox="read-only", max_cost_usd=0.5)
            .request
        )
        self.assertEqual(request.module, context.ContextModule_Named("coder"))
        self.assertEqual(request.task, "fix it")
        self.assertEqual(request.allowed_tools, ["read", "edit"])
        self.assertEqual(request.denied_tools, ["bash"])
        self.assertEqual(json.loads(request.custom_data), {"role": "fixer"})
        self.assertEqual((request.max_iterations, request.max_tokens, request.timeout_ms), (3, 100, 1000))
        self.assertEqual(request.generation.temperature, 0.3)
        self.assertEqual(request.generation.thinking, "high")
        self.assertEqual(request.grants.sandbox, "read-only")
        self.assertEqual(request.grants.max_cost_usd, 0.5)
        # Unset: the parent's.
        untouched = Spawn.same("again").request
        self.assertIsInstance(untouched.module, context.ContextModule_Same)
        self.assertIsNone(untouched.preferred_model)
        self.assertIsNone(untouched.allowed_tools)
        self.assertEqual(untouched.extensions, [])

    def test_a_tier_is_the_providers_model_only_where_the_host_can_open_it(self):
        with mock.patch.object(providers, "get_current_provider", return_value="anthropic"), mock.patch.object(
            providers, "list_providers", return_value=[provider("anthropic", ["claude-haiku-4-5"])]
        ):
            self.assertEqual(Spawn.same("t").tier(Tier.FAST).request.preferred_model, "claude-haiku-4-5")
            # Sonnet is not openable here: the child keeps its parent's model.
            self.assertIsNone(Spawn.same("t").tier(Tier.STRONG).request.preferred_model)
        with mock.patch.object(providers, "get_current_provider", return_value="someone-else"), mock.patch.object(
            providers, "list_providers", return_value=[]
        ):
            self.assertIsNone(Spawn.same("t").tier(Tier.FAST).request.preferred_model)

    def test_a_batch_keeps_each_childs_settings_and_says_which_could_not_start(self):
        asked = []

        def spawn_parallel(requests, max_concurrent):
            asked.append((requests, max_concurrent))
            return [Ok(result(context.ContextStatus_Completed())), Err("depth 9 is past the limit of 8")]

        with mock.patch.object(context, "spawn_parallel", spawn_parallel):
            out = spawn_all([Spawn.same("a").generation(temperature=0.3), Spawn.same("b")], max_concurrent=2)
        (requests, limit), = asked
        self.assertEqual(limit, 2)
        self.assertEqual(requests[0].generation.temperature, 0.3)
        self.assertEqual([r.task for r in requests], ["a", "b"])
        self.assertEqual(out[0].response, "done")
        self.assertIsInstance(out[1], SpawnFailed)
        self.assertEqual(str(out[1]), "depth 9 is past the limit of 8")

    def test_a_child_that_cannot_start_raises_the_hosts_line(self):
        def refuse(request):
            raise Err("unknown module `codr`; did you mean `coder`?")

        with mock.patch.object(context, "spawn", refuse):
            with self.assertRaises(SpawnFailed) as raised:
                Spawn.named("codr", "t").run()
        self.assertEqual(str(raised.exception), "unknown module `codr`; did you mean `coder`?")


class Results(unittest.TestCase):
    def test_a_result_reads_as_text_with_its_status_and_spend(self):
        done = result(context.ContextStatus_Completed(), data='{"verdict": "approve"}')
        self.assertEqual(
            describe(done),
            'status: completed\nanswer:\ndone\ndata: {"verdict": "approve"}\nmodified files: a.txt\n',
        )
        self.assertEqual(spent(done), "1,300 input + 80 output tokens, $0.0051")
        self.assertEqual(status_text(context.ContextStatus_Error("it broke")), "error: it broke")
        self.assertEqual(status_text(context.ContextStatus_MaxIterationsReached()), "max_iterations_reached")
        self.assertEqual(status_text(context.ContextStatus_BudgetExceeded("cost")), "budget_exceeded: cost")


class CustomTools(unittest.TestCase):
    def test_type_hints_are_the_schema_and_a_parameter_without_a_default_is_required(self):
        def search(query: str, limit: int = 10, exact: Optional[bool] = None, tags: List[str] = (),
                   mode: Literal["fast", "deep"] = "fast") -> str:
            return query

        self.assertEqual(
            schema_of(search),
            {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer"},
                    "exact": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "mode": {"enum": ["fast", "deep"]},
                },
                "required": ["query"],
            },
        )

    def test_a_call_runs_only_once_the_host_has_checked_its_arguments(self):
        tools = Tools()
        ran = []

        @tools.tool
        def word_count(text: str) -> str:
            """Counts the words of a text."""
            ran.append(text)
            return str(len(text.split()))

        self.assertIn("word_count", tools)
        with mock.patch.object(custom_tools, "check_arguments", return_value=None):
            self.assertEqual(tools.dispatch("word_count", '{"text": "one two"}'), ("2", False))
        with mock.patch.object(custom_tools, "check_arguments", side_effect=Err("`text` is required")):
            self.assertEqual(tools.dispatch("word_count", "{}"), ("`text` is required", True))
        self.assertEqual(ran, ["one two"])
        self.assertEqual(tools.dispatch("nope", "{}"), ("no custom tool `nope`", True))

    def test_registering_gives_the_host_each_tools_name_description_and_schema(self):
        tools = Tools()

        @tools.tool
        def word_count(text: str) -> str:
            """Counts the words of a text."""
            return ""

        given = []
        with mock.patch.object(custom_tools, "register_tool", given.append):
            tools.register()
        (definition,) = given
        self.assertEqual((definition.id, definition.name), ("word_count", "word_count"))
        self.assertEqual(definition.description, "Counts the words of a text.")
        self.assertEqual(json.loads(definition.parameters_schema)["required"], ["text"])


class Specialists(unittest.TestCase):
    def test_a_specialist_keeps_only_the_tools_of_its_trade_it_was_given(self):
        set_to = []
        with mock.patch.object(tools, "get_enabled_tools", return_value=["bash", "read", "grep"]), mock.patch.object(
            tools, "set_enabled_tools", set_to.append
        ):
            self.assertEqual(keep_only_tools("read", "grep", "list"), ["read", "grep"])
        self.assertEqual(set_to, [["read", "grep"]])
        with mock.patch.object(tools, "get_enabled_tools", return_value=["grep"]), mock.patch.object(
            tools, "set_enabled_tools", side_effect=Err("no tool `grep` here")
        ):
            with self.assertRaises(LoopFailed) as refused:
                keep_only_tools("grep")
        self.assertEqual(str(refused.exception), "no tool `grep` here")

    def test_result_data_goes_to_the_parent_as_json_under_the_key_the_host_reads(self):
        state = {}
        with mock.patch.object(storage, "set_state", state.__setitem__):
            set_result_data({"verdict": "approve", "issues": []})
            self.assertEqual(state, {"__result_data__": '{"verdict": "approve", "issues": []}'})
            set_result_data("already json")
            self.assertEqual(state["__result_data__"], "already json")


class Exports(unittest.TestCase):
    def test_loop_failed_ends_the_turn_and_any_other_exception_traps(self):
        class Failing(Loop):
            name = "failing"

            def run_prompt(self, prompt: str) -> str:
                if prompt == "fail":
                    raise LoopFailed("no specialist fits")
                raise ValueError("a bug")

        agent_loop, _ = export(Failing())
        loop = agent_loop()
        self.assertEqual(loop.get_name(), "failing")
        with self.assertRaises(Err) as ended:
            loop.run_prompt("fail")
        self.assertEqual(ended.exception.value, types.LoopError_Internal("no specialist fits"))
        with self.assertRaises(ValueError):
            loop.run_prompt("other")


if __name__ == "__main__":
    unittest.main()
