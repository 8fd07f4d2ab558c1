#!/usr/bin/env python3
"""Sampling through OpenOCD, side by side over ONE rig (QEMU 7.2 running mixed_forever_m4,
`mcuprof vprobe`, OpenOCD 0.12 on it), in one run:

  pcsr      mcuprof record --openocd --mode pcsr --interval 1ns: DWT_PCSR read --batch times
            per Tcl round trip by a loop inside OpenOCD (also swept over batch sizes)
  profile   OpenOCD's own `profile SECONDS gmon.out`: its samples are the gmon.out histogram's
  halt      mcuprof record --openocd --mode halt --interval 1ns: halt, get_reg, resume per sample

For each: samples/s, Tcl round trips per sample (mcuprof's main loop: one per batch or per
sample; `profile` is one command for all its samples), and what the probe saw per sample:
DP/AP scans (each one DAP transaction of a real probe) and MEM-AP transfers, read from the
vprobe's counters (it prints them on SIGUSR1) before and after each phase. Each figure is the
median of --runs runs. Benchmarks report; they assert nothing."""
import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import openocd_rig as rig_support  # noqa: E402

COUNTERS = re.compile(r"mcuprof vprobe: counters after [\d.]+ s; (\d+) JTAG clocks, (\d+) DP/AP scans, "
                      r"(\d+) MEM-AP transfers, (\d+) register transfers, (\d+) PCSR samples")


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


class Rig:
    pass


def counters(rig, pattern=COUNTERS, names=("clocks", "scans", "transfers", "registers", "pcsr")) -> dict[str, int]:
    """The vprobe's counters now: SIGUSR1, then its next counters line (`pattern`, its groups
    named by `names`)."""
    seen = len(rig.vprobe_log)
    rig.vprobe.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in rig.vprobe_log[seen:]:
            m = pattern.search(line)
            if m:
                return dict(zip(names, map(int, m.groups())))
        time.sleep(0.01)
    raise RuntimeError("the vprobe printed no counters")


def measured(rig, run):
    """Runs `run()` -> (samples, seconds, tcl_round_trips) between two counter readings."""
    before = counters(rig)
    samples, seconds, round_trips = run()
    after = counters(rig)
    d = {k: after[k] - before[k] for k in before}
    return {"rate": samples / seconds, "tcl_per_sample": round_trips / samples,
            "scans_per_sample": d["scans"] / samples, "transfers_per_sample": d["transfers"] / samples,
            "samples": samples}


def mcuprof_record(cli, elf, rig, mode, samples, work, batch=None):
    def run():
        rec = work / f"{mode}.rec"
        command = [str(cli), "record", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", mode, "--interval", "1ns",
                   "--samples", str(samples), "--elf", str(elf), "-o", str(rec), "--format", "json"]
        if batch:
            command += ["--batch", str(batch)]
        r = subprocess.run(command, capture_output=True, text=True, check=True)
        sampler = json.loads(r.stdout)["sampler"]
        # The main loop's round trips; the setup (target current, names, curstate, DEMCR,
        # the PCSR probe, the final curstate) adds about 7 per recording.
        round_trips = sampler["pcsr"]["batches"] if mode == "pcsr" else sampler["samples"]
        if mode == "pcsr":
            trip_p50_us.append(sampler["pcsr"]["round_trip_us"]["p50"])
        return sampler["samples"], sampler["samples"] / sampler["samples_per_second"], round_trips
    trip_p50_us = []
    figures = measured(rig, run)
    if trip_p50_us:
        figures["trip_p50_us"] = trip_p50_us[0]
    return figures


def tcl_round_trip_us(rig, count=300):
    """The median time of a Tcl command that touches no target: OpenOCD's own overhead per
    round trip (the cost a batch amortizes)."""
    times = []
    for _ in range(count):
        start = time.perf_counter()
        rig.tcl.raw("set _mcuprof_bench 1")
        times.append(time.perf_counter() - start)
    return 1e6 * median(times)


def openocd_profile(rig, seconds, work):
    def run():
        gmon = work / "gmon.out"
        rig.tcl.run(f"profile {seconds} {gmon}")
        _, _, buckets = rig_support.read_gmon(gmon)
        return sum(buckets), seconds, 1
    return measured(rig, run)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--pcsr-samples", type=int, default=2000)
    parser.add_argument("--halt-samples", type=int, default=150)
    parser.add_argument("--profile-seconds", type=int, default=3)
    parser.add_argument("--batches", default="1,4,16,64,256", help="pcsr batch sizes swept")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    build = Path(args.build)
    cli = build / "mcuprof"
    elf = build / "firmware-ref" / "mixed_forever_m4.elf"
    if shutil.which(rig_support.OPENOCD) is None:
        sys.exit("openocd is not installed")
    rig_support.CLI = cli
    rig = Rig()
    rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-openocd-bench-"))
    sweep = [int(b) for b in args.batches.split(",")]
    results = {"pcsr": [], "profile": [], "halt": []}
    tcl_trips = []
    sweep_results = {b: [] for b in sweep}
    try:
        rig_support.start_rig(rig, elf)
        for _ in range(args.runs):
            tcl_trips.append(tcl_round_trip_us(rig))
            results["pcsr"].append(mcuprof_record(cli, elf, rig, "pcsr", args.pcsr_samples, rig.work))
            results["profile"].append(openocd_profile(rig, args.profile_seconds, rig.work))
            results["halt"].append(mcuprof_record(cli, elf, rig, "halt", args.halt_samples, rig.work))
            for b in sweep:
                sweep_results[b].append(mcuprof_record(cli, elf, rig, "pcsr", args.pcsr_samples // 2, rig.work, b))
    finally:
        rig_support.stop_rig(rig)

    def figure(rows, key):
        return median([r[key] for r in rows])

    print("sampling through OpenOCD 0.12 over mcuprof vprobe (QEMU 7.2, mixed_forever_m4), median of %d runs"
          % args.runs)
    print("  %-42s %10s %12s %12s %12s" % ("per sample:", "samples/s", "Tcl trips", "DAP scans", "MEM-AP xfers"))
    names = {"pcsr": "mcuprof record --mode pcsr (default batch)", "profile": "OpenOCD profile",
             "halt": "mcuprof record --mode halt"}
    for key in ("pcsr", "profile", "halt"):
        rows = results[key]
        print("  %-42s %10.0f %12.3f %12.1f %12.1f" % (names[key], figure(rows, "rate"), figure(rows, "tcl_per_sample"),
                                                      figure(rows, "scans_per_sample"),
                                                      figure(rows, "transfers_per_sample")))
    pcsr, profile, halt = (figure(results[k], "rate") for k in ("pcsr", "profile", "halt"))
    print("  ratios: pcsr / profile %.2f, pcsr / halt %.1f, profile / halt %.1f" % (pcsr / profile, pcsr / halt,
                                                                                   profile / halt))
    print("  Tcl round trip touching no target (OpenOCD's overhead per batch): p50 %.0f us" % median(tcl_trips))
    print("  pcsr by batch size (a batch's round trip, p50, and what it costs per read):")
    for b in sweep:
        rows = sweep_results[b]
        trip = figure(rows, "trip_p50_us")
        print("    --batch %-4d %8.0f samples/s %8.3f Tcl trips/sample %6.1f DAP scans/sample  trip %8.0f us = %6.0f us/read"
              % (b, figure(rows, "rate"), figure(rows, "tcl_per_sample"), figure(rows, "scans_per_sample"), trip,
                 trip / b))


if __name__ == "__main__":
    main()
