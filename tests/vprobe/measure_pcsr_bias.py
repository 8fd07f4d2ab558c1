#!/usr/bin/env python3
"""The rig's bias of back-to-back DWT_PCSR reads, before and after the PC file, for
docs/vprobe.md ("DWT_PCSR without a halt"). Not a test: it prints figures. Run after
`make build` (PYTHONPATH as the tests have it, tests/pylib/pythonpath):

    python3 tests/vprobe/measure_pcsr_bias.py [--runs 2] [--chunks 20] [--stlink dapdirect_swd]

Each run: QEMU with the truth plugin at uniform cost (2000 ns an instruction), the vprobe and
OpenOCD over JTAG (or an ST-Link transport), `record --mode pcsr --pcsr-read profile --batch
1024` for CHUNKS chunks, once with every DWT_PCSR read a halt of QEMU (the vprobe without
--pc-file, as before) and once from the plugin's PC file (no halt). Printed per run: the share
of SysTick_Handler (and the other rows the census puts above 1 %) in the reads, in the
window's halt census (FILE.time) and in its PC-read census (FILE.pcsr), with the report's
errors (from the spread between chunks); and where inside SysTick_Handler the reads fell.
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import fwtest
import openocd_rig as t
import qemu_runner

IMAGE = "fpu_frshape_fast_forever_o2_m4"
COST_NS = 2000


class Rig:
    pass


def by_function(window: dict[int, int]) -> dict[str, int]:
    return dict(fwtest.by_function(window, fwtest.symbols(IMAGE)))


def one_run(pc_file: bool, chunks: int, seed: int, stlink: str | None) -> dict:
    rig = Rig()
    rig.stlink_transport = stlink
    rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-pcsr-bias-"))
    elf = fwtest.elf_path(IMAGE)
    try:
        t.start_rig(rig, elf, truth=rig.work / "truth.txt", uniform_cost_ns=COST_NS, pc_file=pc_file)
        counts0, time0 = rig.qemu.snapshot_and_times()
        shown0 = rig.qemu.snapshot_shown()
        rec = rig.work / "pcsr.rec"
        run = subprocess.run([str(t.CLI), "record", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", "pcsr",
                              "--pcsr-read", "profile", "--batch", "1024", "--interval", "100ms",
                              "--samples", str(1024 * chunks), "--seed", str(seed), "--elf", str(elf),
                              "-o", str(rec), "--format", "json"], capture_output=True, text=True, timeout=1200)
        counts1, time1 = rig.qemu.snapshot_and_times()
        shown1 = rig.qemu.snapshot_shown()
        if run.returncode != 0:
            raise SystemExit(run.stderr)
        doc = json.loads(run.stdout)
        by_addr = subprocess.run([str(t.CLI), "report", str(rec), "--elf", str(elf), "--by", "address",
                                  "--format", "json"], capture_output=True, text=True, timeout=120)
        return {"doc": doc, "seconds": doc.get("duration_s"),
                "time": by_function(qemu_runner.census_window(time0, time1)),
                "shown": by_function(qemu_runner.census_window(shown0, shown1)),
                "counts": by_function(qemu_runner.census_window(counts0, counts1)),
                "addresses": json.loads(by_addr.stdout) if by_addr.returncode == 0 else None}
    finally:
        t.stop_rig(rig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=20)
    ap.add_argument("--stlink", default=None, help="dapdirect_swd or hla_swd (default: JTAG)")
    args = ap.parse_args()
    start, end = fwtest.symbols(IMAGE).range("SysTick_Handler")
    for k in range(args.runs):
        for pc_file in (False, True):
            r = one_run(pc_file, args.chunks, 5 + 18 * k, args.stlink)
            doc = r["doc"]
            rows = {row["name"]: row for row in doc["functions"]}
            time_total, shown_total, count_total = (sum(r[x].values()) for x in ("time", "shown", "counts"))
            label = "PC file (no halt)" if pc_file else "halt per read"
            print(f"\nrun {k + 1}, {label}: {doc['samples']} reads, errors {doc['errors']['method']}", flush=True)
            names = sorted((n for n, v in r["time"].items() if v / time_total >= 0.01 or n == "SysTick_Handler"),
                           key=lambda n: -r["time"][n])
            for name in names:
                row = rows.get(name, {"percent": 0.0, "stderr": 0.0})
                p_time = 100 * r["time"][name] / time_total
                p_shown = 100 * r["shown"].get(name, 0) / shown_total
                z = (row["percent"] - p_shown) / row["stderr"] if row["stderr"] else float("nan")
                print(f"  {name:28s} reads {row['percent']:6.2f} +- {row['stderr']:5.2f}   halt census {p_time:6.2f}"
                      f"   PC-read census {p_shown:6.2f}   counts {100 * r['counts'].get(name, 0) / count_total:6.2f}"
                      f"   z {z:+.2f}   x{row['percent'] / p_shown if p_shown else float('nan'):.2f}")
            if r["addresses"]:
                inside = collections.Counter()
                for row in r["addresses"].get("functions", r["addresses"].get("rows", [])):
                    try:
                        a = int(str(row["name"]).split()[0], 16)
                    except ValueError:
                        continue
                    if start <= a < end:
                        inside[a - start] += row["samples"]
                print(f"  SysTick_Handler reads by offset: {dict(sorted(inside.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
