#!/usr/bin/env bash
# make demo: profile the bundled reference firmware live in QEMU and compare with the truth.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/demo.py "${1:-build}"
