#!/bin/sh
# Builds {{name}}.wasm from loop.c and the bindings beside it (wit-bindgen's C bindings of
# wit/, written by `wonopcode loops new`): clang's wasm32-wasi target with wasi-libc
# (Debian: `apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32`; or the WASI SDK:
# CC=/opt/wasi-sdk/bin/clang WASI_SYSROOT=/opt/wasi-sdk/share/wasi-sysroot), then the core
# module made a component with the WASI adapter wonopcode carries.
set -eu
cd "$(dirname "$0")"
mkdir -p target
"${CC:-clang}" --target=wasm32-wasi --sysroot="${WASI_SYSROOT:-/usr}" -mexec-model=reactor \
  -O2 -Wall -Wno-unused-parameter -o target/core.wasm \
  loop.c agent_loop_world.c agent_loop_world_component_type.o
"${WONOPCODE:-wonopcode}" loops componentize target/core.wasm -o {{name}}.wasm
