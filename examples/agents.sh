#!/usr/bin/env bash
# The multi-agent example, offline: a recorded transcript replayed through the real guests
# and the real tools on a fresh scratch copy of examples/agents/workspace.
#
#   bash examples/agents.sh                 # the orchestrator delegating to specialists
#   bash examples/agents.sh coder           # one specialist on its own (planner, coder,
#                                           # researcher, reviewer)
#   bash examples/agents.sh architect       # seed 000's custom-tool example: its
#                                           # analyze_architecture spawns the analyzer
#   bash examples/agents.sh coder --json    # extra flags go to wonopcode
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="orchestrator"
if [[ $# -gt 0 && "$1" != -* ]]; then
  name="$1"
  shift
fi
agents="$here/agents"
if [[ ! -f "$agents/prompts/$name.txt" ]]; then
  echo "error: no example named \`$name\`; use orchestrator, architect, planner, coder, researcher or reviewer" >&2
  exit 2
fi
scratch="$agents/scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
cp -R "$agents/workspace/." "$scratch/"
# Build first, so the guests the registry points at exist.
# Its progress is on stderr: the first build takes minutes on a fresh machine.
echo "building wonopcode (cargo build -p wonopcode)..." >&2
cargo build -p wonopcode
"$here/../target/debug/wonopcode" "$@" \
  --loops-dir "$agents" \
  --agent-loop-name "$name" \
  --replay "$agents/transcripts/$name.jsonl" \
  -C "$scratch" \
  --yes \
  "$(cat "$agents/prompts/$name.txt")"
if [[ "$name" == orchestrator ]]; then
  # The script's own lines go to stderr: stdout is wonopcode's (`--json` stays parseable).
  echo >&2
  echo "--- $scratch/greet.sh --shout, as the coder changed it:" >&2
  sh "$scratch/greet.sh" --shout wonopcode >&2
fi
