#!/usr/bin/env bash
# `cargo clippy` (a `cargo check` that also refuses warnings) of the whole workspace, its
# tests and benchmarks included, for both macOS targets, cross from Linux: rustup's
# standard library for each target, and zig (the `ziglang` wheel from PyPI, pinned) as the
# C compiler and archiver of the build scripts that compile C (ring, blake3, tree-sitter,
# wasmtime's helpers). Nothing is linked, so no macOS SDK is needed. docs/decisions.md
# says why zig; docs/benchmarks.md how long this takes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ZIG_VERSION=0.15.1
python3 -m pip install --quiet --disable-pip-version-check "ziglang==${ZIG_VERSION}"
rustup target add aarch64-apple-darwin x86_64-apple-darwin

# The wrappers cc-rs runs: `zig cc` for the target (without the `-arch NAME` and
# `--target=arm64-apple-macosx` that cc-rs gives Apple's clang, whose names zig does not
# know: the target is zig's own `-target`), and `zig ar`.
wrappers="$PWD/target/zig-wrappers"
mkdir -p "$wrappers"
for arch in aarch64 x86_64; do
  cat > "$wrappers/${arch}-macos-cc" <<SH
#!/bin/sh
for arg in "\$@"; do
  shift
  if [ "\$skip" = 1 ]; then skip=0; continue; fi
  if [ "\$arg" = -arch ]; then skip=1; continue; fi
  case "\$arg" in --target=*) continue ;; esac
  set -- "\$@" "\$arg"
done
exec python3 -m ziglang cc -target ${arch}-macos "\$@"
SH
  chmod +x "$wrappers/${arch}-macos-cc"
done
cat > "$wrappers/zig-ar" <<'SH'
#!/bin/sh
exec python3 -m ziglang ar "$@"
SH
chmod +x "$wrappers/zig-ar"

for arch in aarch64 x86_64; do
  target="${arch}-apple-darwin"
  env "CC_${arch}_apple_darwin=$wrappers/${arch}-macos-cc" \
      "AR_${arch}_apple_darwin=$wrappers/zig-ar" \
      cargo clippy --workspace --all-targets --target "$target" -- -D warnings
done
