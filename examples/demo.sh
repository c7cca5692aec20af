#!/usr/bin/env bash
# The offline demo: a recorded multi-turn transcript replayed through the real StandardLoop
# and the real tools, on a fresh scratch copy of examples/demo/workspace. The model lists,
# greps and reads the files, keeps a todo list, and writes TODO_REPORT.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$here/demo/scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
cp -R "$here/demo/workspace/." "$scratch/"
# Cargo's progress is on stderr: the first build takes minutes on a fresh machine.
cargo run -p wonopcode -- "$@" \
  --replay "$here/demo/transcript.jsonl" \
  -C "$scratch" \
  --yes \
  "$(cat "$here/demo/prompt.txt")"
# The script's own lines go to stderr: stdout is wonopcode's (`--json` stays parseable).
echo >&2
echo "--- $scratch/TODO_REPORT.md, written by the model's write call:" >&2
cat "$scratch/TODO_REPORT.md" >&2
