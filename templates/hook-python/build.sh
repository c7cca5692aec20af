#!/bin/sh
# Builds {{name}}.wasm from app.py (componentize-py generates the bindings from wit/).
set -eu
cd "$(dirname "$0")"
componentize-py -d wit -w hook componentize -p . app -o {{name}}.wasm
