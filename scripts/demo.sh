#!/usr/bin/env bash
# make demo: profile the bundled reference firmware live in QEMU and compare with the truth.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Python imports (the QEMU runner): the directories tests/pylib/pythonpath lists.
PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
export PYTHONPATH
exec python3 scripts/demo.py "${1:-build}"
