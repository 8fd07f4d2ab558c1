#!/usr/bin/env bash
# The demo: profile the bundled reference firmware (three loops at about 70/20/10 %)
# running in QEMU, and show the profile next to the exact truth of the same run.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
elf=$build/firmware-ref/loops_jit_m4.elf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== running $elf in QEMU (netduinoplus2, -icount shift=0), with the truth plugin"
python3 firmware-ref/runner/qemu_runner.py "$elf" --uart "$work/uart.txt" --truth "$work/counts.txt" --timeout 120

echo
echo "== mcuprof report: the on-chip sampler's dump, read from the UART"
"$build/mcuprof" report "$work/uart.txt" --elf "$elf" --top 8

echo
echo "== mcuprof truth: every executed instruction, counted by the QEMU plugin"
"$build/mcuprof" truth "$work/counts.txt" --elf "$elf" --top 8
