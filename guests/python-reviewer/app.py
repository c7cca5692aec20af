"""A reviewer specialist written in Python on the wonopcode-guest SDK: reads the workspace with
the host's read-only tools and returns a verdict to its parent as data:
`{"verdict": "approve" | "request_changes", "issues": ["..."]}`.

Built with componentize-py against `wit/` and the SDK's source (`scripts/build-polyglot-guests.sh`).
An answer that holds no verdict gets one more turn; a second one raises `ReviewFailed`, which
is not the SDK's `LoopFailed`: it traps the guest, and the host ends the child with its line.
"""

import json

from wonopcode_guest import Agent, Loop, export, keep_only_tools, set_result_data

# Read-only tools: a reviewer never writes, whatever its parent allowed it.
TOOLS = ("read", "glob", "grep", "list")

# Model turns a review may take.
MAX_ROUNDS = 20

FORMAT = (
    "When you are done, answer with a JSON object: "
    '{"verdict": "approve" or "request_changes", "issues": ["..."]}.'
)


class ReviewFailed(Exception):
    """The review cannot give a verdict."""


def verdict_of(answer):
    """The verdict object in the answer: a fenced json block, else the outermost braces."""
    candidates = []
    if "```json" in answer:
        candidates.append(answer.split("```json", 1)[1].split("```", 1)[0])
    start, end = answer.find("{"), answer.rfind("}")
    if 0 <= start < end:
        candidates.append(answer[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            if value.get("verdict") not in ("approve", "request_changes"):
                raise ReviewFailed('`verdict` must be "approve" or "request_changes"')
            issues = value.get("issues")
            if not isinstance(issues, list) or not all(isinstance(i, str) for i in issues):
                raise ReviewFailed("`issues` must be a list of strings")
            return value
    raise ReviewFailed("the answer holds no JSON object")


class Reviewer(Loop):
    name = "python-reviewer"

    def run_prompt(self, prompt: str) -> str:
        keep_only_tools(*TOOLS)
        agent = Agent(max_rounds=MAX_ROUNDS)
        answer = agent.run(f"{prompt}\n\n{FORMAT}")
        try:
            verdict = verdict_of(answer)
        except ReviewFailed as problem:
            answer = agent.run(
                f"Your answer cannot be used: {problem}. Reply again with only the JSON object."
            )
            verdict = verdict_of(answer)
        set_result_data(verdict)
        return answer


AgentLoop, CustomToolHandler = export(Reviewer())
