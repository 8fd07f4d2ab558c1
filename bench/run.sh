#!/usr/bin/env bash
# Runs every benchmark against the peers, side by side, and prints the ratios.
# Benchmarks report figures; they assert nothing (the tests do that).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
# The Python imports (the QEMU runner, the tests' library and OpenOCD rig): the directories
# tests/pylib/pythonpath lists, as ctest gives them to the tests.
PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
export PYTHONPATH
echo "== attribution: mcuprof report vs the seed's prof75a.py"
python3 bench/attribution_bench.py --mcuprof "$build/mcuprof" --elf "$build/firmware-ref/loops_m4.elf" --work "$build/bench"
echo "== SWO parsing: mcuprof report vs the seed's itm75a.py and pyOCD's SWOParser (MCUPROF_PYOCD_SRC)"
python3 bench/itm_bench.py --mcuprof "$build/mcuprof" --elf "$build/firmware-ref/loops_m4.elf" --work "$build/bench"

echo "== start-up on 22 MB of DWARF: mcuprof report and record vs llvm-symbolizer and addr2line"
python3 bench/startup_bench.py --build "$build"

echo
echo "== live: mcuprof's halting sampler vs the protocol floor and a gdb batch script"
python3 bench/live_bench.py --build "$build"

echo
echo "== stacks: mcuprof --stacks vs pc only vs a gdb backtrace script"
python3 bench/stacks_bench.py --build "$build"

echo
echo "== OpenOCD: mcuprof pcsr and halt modes vs OpenOCD's own profile, over one QEMU + vprobe + OpenOCD rig"
python3 bench/openocd_bench.py --build "$build"

echo
echo "== ST-Link: OpenOCD's profile vs mcuprof halt, pcsr and pcsr through profile chunks, at 0, 125 us and 1 ms probe latency"
# On QEMU 10 where `make test` unpacked it (Debian 12's build/qemu10), unless MCUPROF_QEMU says
# otherwise: QEMU 7.2's gdbstub has no MSP/PSP, so each READALLREGS there single-steps six MRS,
# QEMU's work inside the probe's commands, not the probe's (docs/live.md, "ST-Link commands").
# The bench's first line names the QEMU it ran.
qemu10="$build/qemu10/qemu-system-arm"
if [ -z "${MCUPROF_QEMU:-}" ] && [ -x "$qemu10" ]; then
  MCUPROF_QEMU="$qemu10" python3 bench/stlink_bench.py --build "$build"
else
  python3 bench/stlink_bench.py --build "$build"
fi
