#!/usr/bin/env bash
# Guests in three languages, offline: a Rust orchestrator hands a question to a JavaScript
# researcher and a Python reviewer at the same time (through the registry and the parallel
# spawn call) and answers from both. A recorded transcript replayed through the real guests
# and the real tools on a fresh scratch copy of examples/agents/workspace.
#
#   bash examples/polyglot.sh            # extra flags go to wonopcode (--json, --trace FILE)
#
# The JavaScript and Python guests need their componentizers once (see the README):
#   python3 -m pip install -r guests/python-reviewer/requirements.txt
#   npm install --prefix guests/js-researcher
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/.."
polyglot="$here/polyglot"
scratch="$polyglot/scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
cp -R "$here/agents/workspace/." "$scratch/"
# Its progress is on stderr: the first build takes minutes on a fresh machine.
echo "building wonopcode (cargo build -p wonopcode)..." >&2
cargo build -p wonopcode
bash "$root/scripts/build-polyglot-guests.sh" > /dev/null
"$root/target/debug/wonopcode" "$@" \
  --loops-dir "$polyglot" \
  --agent-loop-name polyglot-orchestrator \
  --replay "$polyglot/transcript.jsonl" \
  -C "$scratch" \
  --yes \
  "$(cat "$polyglot/prompt.txt")"
