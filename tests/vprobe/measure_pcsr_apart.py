"""Why back-to-back PC reads under-read tick_smooth when they share the host's CPUs with QEMU,
and that they do not when kept apart: a measurement, not a test (docs/vprobe.md, "Reads apart
from QEMU").

QEMU runs fpu_frshape_fast_forever_o2_m4 at uniform cost with the truth plugin's PC file
(firmware-ref/truth/truth.c), and this process reads the slot itself, back to back, for a
number of seconds: no vprobe, no OpenOCD, nothing between the reads and the slot. Per function
it prints the share of the reads against the window's PC-read census (FILE.pcsr), with the
error from the spread between 50 ms chunks (the ratio estimator of cluster sampling), and the
reader's presence: the host time in which the reader saw the function in the slot with reads
under 20 us apart (it was on a CPU throughout), over the census's time for it. A reader whose
CPU time knows nothing of the guest's phase has the same presence everywhere; one that loses its
CPU at the guest's timer events has less in the code that runs after them (tick_smooth).

    cd tests/vprobe && python3 measure_pcsr_apart.py [--seconds 8] [--runs 2] [--fast]

--fast reads with measure_pcsr_apart_reader.c instead (compiled here with cc -O2 into a
temporary folder), about 10 M reads a second against the Python loop's 450 000: the reader
whose figures docs/vprobe.md gives first.

with the environment docs/testing.md gives (PYTHONPATH, MCUPROF_FW_DIR; MCUPROF_QEMU selects
QEMU 10). Each run is done together (no affinity set) and apart (QEMU on the first CPU, this
process on the others, openocd_rig.cpus_apart()). Needs two CPUs for the apart runs.
"""
from __future__ import annotations

import argparse
import collections
import math
import mmap
import os
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import fwtest
import qemu_runner
from openocd_rig import cpus_apart, pin_process

IMAGE = "fpu_frshape_fast_forever_o2_m4"
COST_NS = 2000
CHUNK_NS = 50_000_000
PRESENT_NS = 20_000
SLOT = 8   # the first vCPU's slot: after the magic and the count (truth.c, the PC file)


def read_slot(path: Path, seconds: float) -> tuple[list[collections.Counter], collections.Counter, int]:
    """Back-to-back reads of the slot for `seconds`: reads per address in each chunk, and the
    present time per address (ns from a read to the next, when under PRESENT_NS)."""
    with open(path, "rb") as f:
        view = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        unpack, clock = struct.Struct("<I").unpack_from, time.monotonic_ns
        chunks, chunk, present = [], {}, {}
        start = clock()
        end, next_chunk = start + int(seconds * 1e9), start + CHUNK_NS
        previous, before, reads = 0xFFFFFFFF, start, 0
        while True:
            now = clock()
            if now >= next_chunk:
                chunks.append(collections.Counter(chunk))
                if now >= end:
                    break
                chunk, next_chunk = {}, next_chunk + CHUNK_NS
            (pc,) = unpack(view, SLOT)
            chunk[pc] = chunk.get(pc, 0) + 1
            if now - before < PRESENT_NS:
                present[previous] = present.get(previous, 0) + now - before
            previous, before, reads = pc, now, reads + 1
        chunks = [collections.Counter({a: n for a, n in c.items() if a != 0xFFFFFFFF}) for c in chunks]
        present.pop(0xFFFFFFFF, None)
        return chunks, collections.Counter(present), reads
    finally:
        view.close()


def read_slot_fast(reader: Path, path: Path, seconds: float) -> tuple[list[collections.Counter], collections.Counter, int]:
    """read_slot() by the compiled reader, a child of this process (so on its CPUs)."""
    r = subprocess.run([str(reader), str(path), str(seconds), str(CHUNK_NS / 1e6)], capture_output=True, text=True,
                       timeout=seconds + 60, check=True)
    chunks: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    present: collections.Counter = collections.Counter()
    for line in r.stdout.splitlines():
        chunk, address, n, ns = line.split()
        chunks[int(chunk)][int(address, 16)] += int(n)
        present[int(address, 16)] += int(ns)
    return [chunks[k] for k in sorted(chunks)], present, int(r.stderr.split()[0])


def one_run(seconds: float, apart: bool, reader: Path | None) -> str:
    syms = fwtest.symbols(IMAGE)
    work = Path(tempfile.mkdtemp(prefix="mcuprof-pcsr-apart-"))
    mine = os.sched_getaffinity(0)
    try:
        with qemu_runner.QemuRun(fwtest.elf_path(IMAGE), uart=None, truth=work / "truth.txt", uniform_cost_ns=COST_NS,
                                 pc_file=True, halted=True, qmp=True, workdir=work, timeout=600) as q:
            if apart:
                qemu_cpus, reader_cpus = cpus_apart()
                pin_process(q.proc.pid, qemu_cpus)
                os.sched_setaffinity(0, reader_cpus)
            q.qmp("cont")
            time.sleep(1.0)   # past the start: the tasks and their ticks running
            q.snapshot_and_times()
            before = q.snapshot_shown()
            chunks, present, reads = (read_slot_fast(reader, q.pc_file, seconds) if reader
                                      else read_slot(q.pc_file, seconds))
            q.snapshot_and_times()
            after = q.snapshot_shown()
    finally:
        os.sched_setaffinity(0, mine)
        shutil.rmtree(work, ignore_errors=True)
    census = fwtest.by_function(qemu_runner.census_window(before, after), syms)
    per_chunk = [fwtest.by_function(dict(c), syms) for c in chunks if c]
    present_by = fwtest.by_function(dict(present), syms)
    sizes = [sum(c.values()) for c in per_chunk]
    total, k, census_total = sum(sizes), len(per_chunk), sum(census.values())
    rows = []
    for name, ns in sorted(census.items(), key=lambda kv: -kv[1])[:6]:
        y = [c.get(name, 0) for c in per_chunk]
        p = sum(y) / total
        var = k / (k - 1) * sum((yi - p * m) ** 2 for yi, m in zip(y, sizes)) / total ** 2
        z = (p - ns / census_total) / math.sqrt(var) if var > 0 else float("nan")
        rows.append(f"{name} {100 * p:.2f} % / {100 * ns / census_total:.2f} % (z {z:+.1f}, presence "
                    f"{present_by.get(name, 0) / ns:.2f})")
    return (f"{'apart   ' if apart else 'together'} {'C' if reader else 'Python'} reader, load {os.getloadavg()[0]:4.1f}, {reads} reads in {seconds:.0f} s: "
            + "; ".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--fast", action="store_true", help="read with measure_pcsr_apart_reader.c")
    args = parser.parse_args()
    build = Path(tempfile.mkdtemp(prefix="mcuprof-pcsr-reader-"))
    try:
        reader = None
        if args.fast:
            reader = build / "reader"
            subprocess.run(["cc", "-O2", "-o", str(reader), str(Path(__file__).with_name("measure_pcsr_apart_reader.c"))],
                           check=True)
        runs(args, reader)
    finally:
        shutil.rmtree(build, ignore_errors=True)


def runs(args, reader: Path | None) -> None:
    print(f"{qemu_runner.QEMU} {'.'.join(map(str, qemu_runner.qemu_version()))}: reads % / PC-read census % "
          "(z from 50 ms chunks, presence)", flush=True)
    for _ in range(args.runs):
        for apart in (False, True):
            print(one_run(args.seconds, apart, reader), flush=True)


if __name__ == "__main__":
    main()
