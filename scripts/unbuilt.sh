#!/usr/bin/env bash
# The optional parts a build left out, one line each with the reason its build wrote:
#   scripts/unbuilt.sh BUILD
# the VS Code extension (BUILD/mcuprof-VERSION.vsix.unbuilt, CMakeLists.txt), and the Rust part:
# the reference images (BUILD/firmware-ref/NAME.unbuilt, firmware-ref/src/rust/rust.cmake) and
# the rustc-demangle peer the tests check Rust names against (BUILD/tests/peers/rust-demangle.unbuilt).
# Exits 0: the build goes on without them, and under `make test` the tests that need them fail.
set -euo pipefail
build=$1
shopt -s nullglob

for marker in "$build"/mcuprof-*.vsix.unbuilt; do
  echo "build: skipped the VS Code extension: $(head -n1 "$marker")"
done
rust=("$build"/firmware-ref/rust_*.unbuilt)
if [ -f "$build/tests/peers/rust-demangle.unbuilt" ]; then
  rust+=("$build/tests/peers/rust-demangle.unbuilt")
fi
if [ ${#rust[@]} -gt 0 ]; then
  names=$(for m in "${rust[@]}"; do basename "$m" .unbuilt; done | paste -sd' ')
  # One rustc leaves them out alike: the first reason stands for all.
  echo "build: skipped the Rust part ($names): $(head -n1 "${rust[0]}")"
fi
