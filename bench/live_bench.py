#!/usr/bin/env python3
"""Halting sampler speed against QEMU's gdbstub, side by side in one run:

  floor     bench/rsp_floor: interrupt, 'g', 'c' on a bare socket, nothing else
  mcuprof   mcuprof record --interval 1ns (as fast as it goes): PC, LR, SP, xPSR per sample,
            every sample written to its recording
  gdb       the usual "poor man's profiler": gdb-multiarch -batch connecting, printing $pc and
            detaching, once per sample (connecting halts the target, detaching resumes it)

The target is build/firmware-ref/mixed_forever_m4.elf, which keeps running. Ratios are
samples per second; each figure is the median of --runs runs."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import qemu_runner  # noqa: E402


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def floor_rate(build, port, samples):
    out = subprocess.run([str(build / "bench" / "rsp_floor"), str(port), str(samples)],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) / float(out[1])


def mcuprof_rate(build, elf, port, samples, work, *extra):
    r = subprocess.run([str(build / "mcuprof"), "record", "--gdb", f"127.0.0.1:{port}", "--interval", "1ns",
                        "--samples", str(samples), "--elf", str(elf), "-o", str(work / "bench.bin"),
                        "--format", "json", *extra], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mcuprof record failed ({r.returncode}): {r.stderr.strip()}")
    m = re.search(r"\(([\d.]+) samples/s\)", r.stderr)
    return float(m.group(1))


def gdb_rate(elf, port, samples):
    start = time.perf_counter()
    for _ in range(samples):
        subprocess.run(["gdb-multiarch", "-nx", "-batch", "-ex", f"target remote 127.0.0.1:{port}",
                        "-ex", "p/x $pc", "-ex", "detach", str(elf)], capture_output=True, check=True)
    return samples / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--gdb-samples", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    build = Path(args.build)
    elf = build / "firmware-ref" / "mixed_forever_m4.elf"
    work = Path(tempfile.mkdtemp(prefix="mcuprof-bench-"))
    rates = {"floor": [], "mcuprof": [], "gdb": []}
    with qemu_runner.QemuRun(elf, gdb=True, uart=None, timeout=3600) as q:
        time.sleep(0.2)
        for _ in range(args.runs):
            rates["floor"].append(floor_rate(build, q.gdb_port, args.samples))
            rates["mcuprof"].append(mcuprof_rate(build, elf, q.gdb_port, args.samples, work))
            rates["gdb"].append(gdb_rate(elf, q.gdb_port, args.gdb_samples))
        q.kill()
    floor, ours, gdb = (median(rates[k]) for k in ("floor", "mcuprof", "gdb"))
    print("halting sampler against QEMU 7.2's gdbstub (%s), median of %d runs" % (elf.name, args.runs))
    print("  %-44s %9.0f samples/s" % ("floor (interrupt, g, c on a bare socket)", floor))
    print("  %-44s %9.0f samples/s  (%.2f of the floor)" % ("mcuprof record (pc, lr, sp, xpsr, recorded)",
                                                              ours, ours / floor))
    print("  %-44s %9.1f samples/s" % ("gdb-multiarch -batch per sample", gdb))
    print("  ratio: mcuprof is %.0f times the gdb script (goal: 50); goal 3000 samples/s: %s"
          % (ours / gdb, "met" if ours >= 3000 else "not met"))


if __name__ == "__main__":
    main()
