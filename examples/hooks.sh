#!/usr/bin/env bash
# The hooks example, offline: a recorded transcript replayed through the native loop, with
# the sample policy hook (a WebAssembly component, guests/policy-hook) configured in
# examples/hooks/config.yaml, on a fresh scratch copy of examples/agents/workspace. The
# hook refuses the model's `rm -rf`, and sends its first "done" back until `make test` ran.
#
#   bash examples/hooks.sh            # extra flags go to wonopcode (--json, --trace FILE)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
example="$here/hooks"
scratch="$example/scratch"
rm -rf "$scratch"
mkdir -p "$scratch"
cp -R "$here/agents/workspace/." "$scratch/"
# Build first, so the hook component the config points at exists.
echo "building wonopcode (cargo build -p wonopcode)..." >&2
cargo build -p wonopcode
"$here/../target/debug/wonopcode" "$@" \
  --config "$example/config.yaml" \
  --replay "$example/transcript.jsonl" \
  -C "$scratch" \
  --yes \
  "$(cat "$example/prompt.txt")"
echo >&2
echo "--- sh $scratch/greet.sh -h:" >&2
sh "$scratch/greet.sh" -h >&2
