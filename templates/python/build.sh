#!/bin/sh
# Builds {{name}}.wasm from app.py and the SDK in vendor/ (componentize-py generates the
# bindings from wit/).
set -eu
cd "$(dirname "$0")"
componentize-py -d wit -w agent-loop-world componentize -p . -p vendor app -o {{name}}.wasm
