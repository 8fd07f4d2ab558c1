#!/usr/bin/env python3
"""Stack sampling speed against QEMU's gdbstub, side by side in one run:

  pc only   mcuprof record: PC, LR, SP, xPSR per halt
  stacks    mcuprof record --stacks: every register, a 512-byte stack window, unwound on the
            host with the ELF's call-frame information, every stack recorded
  gdb bt    gdb-multiarch -batch connecting, printing a backtrace and detaching, per sample

The target is build/firmware-ref/calltree_forever_m4.elf (a call tree 3 to 10 frames deep,
an interrupt on top of it). Each figure is the median of --runs runs."""
import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import qemu_runner  # noqa: E402
from live_bench import mcuprof_rate, median  # noqa: E402


def gdb_bt_rate(elf, port, samples):
    start = time.perf_counter()
    for _ in range(samples):
        subprocess.run(["gdb-multiarch", "-nx", "-batch", "-ex", f"target remote 127.0.0.1:{port}",
                        "-ex", "bt", "-ex", "detach", str(elf)], capture_output=True, check=True)
    return samples / (time.perf_counter() - start)


def mean_depth(work):
    summary = re.search(rb'"mean_depth":([\d.]+)', (work / "bench.bin").read_bytes())
    return float(summary.group(1)) if summary else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--gdb-samples", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    build = Path(args.build)
    elf = build / "firmware-ref" / "calltree_forever_m4.elf"
    work = Path(tempfile.mkdtemp(prefix="mcuprof-bench-"))
    rates = {"pc": [], "stacks": [], "gdb": []}
    with qemu_runner.QemuRun(elf, gdb=True, uart=None, timeout=3600) as q:
        time.sleep(0.2)
        for _ in range(args.runs):
            rates["pc"].append(mcuprof_rate(build, elf, q.gdb_port, args.samples, work))
            rates["stacks"].append(mcuprof_rate(build, elf, q.gdb_port, args.samples, work, "--stacks"))
            rates["gdb"].append(gdb_bt_rate(elf, q.gdb_port, args.gdb_samples))
        q.kill()
    pc, stacks, gdb = (median(rates[k]) for k in ("pc", "stacks", "gdb"))
    print("stack sampling against QEMU 7.2's gdbstub (%s), median of %d runs" % (elf.name, args.runs))
    print("  %-46s %9.0f samples/s" % ("mcuprof record, pc only", pc))
    print("  %-46s %9.0f stacks/s  (%.2f of pc only; mean depth %.1f)"
          % ("mcuprof record --stacks (unwound, recorded)", stacks, stacks / pc, mean_depth(work)))
    print("  %-46s %9.1f stacks/s" % ("gdb-multiarch -batch bt per sample", gdb))
    print("  ratio: mcuprof --stacks is %.0f times the gdb script; goal 1000 stacks/s: %s"
          % (stacks / gdb, "met" if stacks >= 1000 else "not met"))


if __name__ == "__main__":
    main()
