#!/usr/bin/env python3
"""Sampling through an ST-Link, side by side, on ONE rig per probe latency: QEMU 7.2 running
mixed_forever_m4, `mcuprof vprobe --stlink-port --latency L` (an STLINK-V3 whose every answer
leaves L after its command arrived: 0, 125 us for a V3 at USB high speed, 1 ms for a V2 at full
speed), OpenOCD 0.12's st-link driver on it (configs/openocd/qemu-stlink.cfg, dapdirect_swd by
default). For each latency:

  profile        OpenOCD's `profile SECONDS gmon.out` (--profile-calls of them in a row):
                 DWT_PCSR read 1024 times per non-incrementing memory command
                 (READMEM_32BIT_NO_ADDR_INC), at most 10000 reads a call
  halt           mcuprof record --mode halt --interval 1ns: one Tcl script per sample through the
                 core's debug registers (DHCSR C_HALT, pc lr sp xPSR by DCRSR/DCRDR, DHCSR again)
  halt-stacks    the same with --stacks: also r7 and a stack window read in that script, further
                 stack reads while halted, then the resume
  stlink         mcuprof record --stlink --interval 1ns: no OpenOCD in the way, mcuprof's own ST-Link
                 commands through the same stlink-server (READDEBUGREG DHCSR, WRITEDEBUGREG C_HALT,
                 READALLREGS, WRITEDEBUGREG to resume), OpenOCD's background polling off meanwhile
  stlink-stacks  the same with --stacks: one READMEM_32BIT of the window from the new SP too
  stlink-pcsr    mcuprof record --stlink --mode pcsr --interval 1ns: DWT_PCSR while the core runs,
                 each batch of 16 (the default --batch) one READMEM_32BIT_NO_ADDR_INC
  stlink-pcsr-1024  the same with --batch 1024, the most one such command reads here
  halt-openocd   OpenOCD's own `halt; get_reg {pc lr sp xPSR}; resume` per sample in a Tcl loop
                 (mcuprof's halt mode before; run by this script, polling on as it comes)
  halt-budget    the same with --max-halted 25: the halted share held under 25 % (a quarter of
                 --halt-samples: each sample then takes four halts' time)
  pcsr           mcuprof record --mode pcsr --interval 1ns: DWT_PCSR by `read_memory`, --batch
                 reads per Tcl round trip, the batch inside `capture` (which holds off OpenOCD's
                 background polling)
  pcsr-plain     the same batch without `capture` (mcuprof's script before it), run by this
                 script
  pcsr-profile   mcuprof record --mode pcsr --pcsr-read profile: the same, each batch one
                 `profile` call sized by time to up to 10000 reads (each 1024 non-incrementing
                 reads one USB command)
  apreg          DWT_PCSR as MEM-AP banked data register BD3 through `$dap apreg` in a Tcl loop
                 (measured here by the script itself, not a mode of mcuprof)

Figures: samples/s; USB commands per sample (each one USB round trip on a real probe, counted
by the vprobe, which prints its counters on SIGUSR1, before and after each phase); the share of
the time the debugger kept the core halted (halt mode: its halt round trips; the PCSR readers
never halt it). Reported as ratios to `profile` at the same latency. Each figure is the median
of --runs runs; the last column is each run's rate over that of the `profile` run of the same
round (the pair saw about the same load; `profile` runs first in even rounds and last in odd
ones, so a drift over the session weighs on both sides alike): their median and range, and
their geometric mean with a 95 % t interval, which tells a real gap from the emulation's spread. --account instead prints the USB
commands of single `profile` calls by kind. Benchmarks report; they assert nothing."""
import argparse
import json
import math
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import qemu_runner  # noqa: E402
import openocd_rig as rig_support  # noqa: E402
import openocd_bench  # noqa: E402
from openocd_bench import Rig, median  # noqa: E402

COUNTERS = re.compile(r"mcuprof vprobe: counters after [\d.]+ s; (\d+) USB commands, (\d+) DP/AP scans, "
                      r"(\d+) MEM-AP transfers, (\d+) register transfers, (\d+) PCSR samples")
DWT_PCSR = 0xE000101C


def counters(rig) -> dict[str, int]:
    return openocd_bench.counters(rig, COUNTERS, ("usb", "scans", "transfers", "registers", "pcsr"))


KINDS = re.compile(r"mcuprof vprobe: USB commands by kind: (.*)$")


def command_kinds(rig) -> dict[str, int]:
    """The vprobe's USB commands by kind so far: SIGUSR1, then its next "by kind" line."""
    seen = len(rig.vprobe_log)
    rig.vprobe.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in rig.vprobe_log[seen:]:
            m = KINDS.search(line.rstrip())
            if m:
                kinds = {}
                for item in filter(None, m.group(1).split(", ")):
                    name, count = item.rsplit(" ", 1)
                    kinds[name] = int(count)
                return kinds
        time.sleep(0.01)
    raise RuntimeError("the vprobe printed no USB commands by kind")


def account(rig, label, tcl_command, raw=False):
    """The USB commands one Tcl request sends, by kind, printed. `raw`: the request as it is
    (else inside `capture`, as mcuprof sends its commands)."""
    before = command_kinds(rig)
    started = time.perf_counter()
    said = rig.tcl.raw(tcl_command) if raw else rig.tcl.run(tcl_command)
    elapsed = time.perf_counter() - started
    after = command_kinds(rig)
    diff = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    diff = {k: v for k, v in sorted(diff.items(), key=lambda kv: -kv[1]) if v}
    reads = re.search(r"Profiling completed\. (\d+) samples", said)
    print(f"  {label}: `{tcl_command}` {elapsed:.3f} s, {sum(diff.values())} USB commands"
          f"{', ' + reads.group(1) + ' reads' if reads else ''}")
    for kind, count in diff.items():
        print(f"    {count:6d}  {kind}")


def account_profile(rig, seconds):
    """What each `profile` call costs, command by command: OpenOCD's background polling alone
    (a `sleep` outside `capture`), one `profile 0` (one pass of 1024 reads) and one
    `profile SECONDS` (up to the 10000-read cap) inside `capture`, then the same two with
    background polling off (`poll off` in a request of its own before them)."""
    gmon = rig.work / "account.gmon"
    account(rig, "idle 1 s, outside capture (background polling)", "sleep 1000", raw=True)
    account(rig, "one pass", f"profile 0 {gmon}")
    account(rig, "one long call", f"profile {seconds} {gmon}")
    rig.tcl.run("poll off")
    try:
        account(rig, "idle 1 s, polling off", "sleep 1000", raw=True)
        account(rig, "one pass, polling off", f"profile 0 {gmon}")
        account(rig, "one long call, polling off", f"profile {seconds} {gmon}")
    finally:
        rig.tcl.run("poll on")


def measured(rig, run):
    """Runs `run()` -> (samples, seconds, halted seconds) between two counter readings; None
    when the method failed (printed)."""
    before = counters(rig)
    try:
        samples, seconds, halted = run()
    except (RuntimeError, AssertionError) as e:
        print(f"  (failed: {str(e).strip().splitlines()[-1][:300]})", file=sys.stderr)
        return None
    after = counters(rig)
    return {"rate": samples / seconds, "usb_per_sample": (after["usb"] - before["usb"]) / samples,
            "halted_share": halted / seconds, "samples": samples}


def mcuprof_record(cli, elf, rig, mode, samples, work, *options):
    return record_run(cli, elf, rig, samples, work / f"{mode}.rec",
                      ("--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", mode, *options))


def stlink_record(cli, elf, rig, samples, work, *options):
    """mcuprof's own ST-Link commands through the vprobe's server, beside OpenOCD (its polling
    off: it would find our halts and run its debug entry), so halting with --halt-shared (an
    OpenOCD on the server would otherwise pause the halts)."""
    shared = () if "pcsr" in options else ("--halt-shared",)
    return record_run(cli, elf, rig, samples, work / "stlink.rec",
                      ("--stlink", f"127.0.0.1:{rig.bitbang_port}", *shared, *options), polling_off=True)


def record_run(cli, elf, rig, samples, rec, link_options, polling_off=False):
    def run():
        command = [str(cli), "record", *link_options, "--interval", "1ns", "--samples", str(samples),
                   "--elf", str(elf), "-o", str(rec), "--format", "json"]
        if polling_off:
            rig.tcl.run("poll off")
        try:
            r = subprocess.run(command, capture_output=True, text=True)
        finally:
            if polling_off:
                rig.tcl.run("poll on")
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: {r.stderr}")
        sampler = json.loads(r.stdout)["sampler"]
        seconds = sampler["wall_seconds"]
        # run_duty: the share of the time the target ran by the sampler's clock (halt mode:
        # outside its halt round trips; the PCSR readers never halt it)
        return sampler["samples"], seconds, seconds * (1.0 - sampler["run_duty"])
    return measured(rig, run)


def openocd_profile(rig, seconds, work, calls=1):
    """`calls` calls of `profile SECONDS` one after the other, as a user gathers more than one
    call's 10000 reads by hand; their samples over their time."""
    def run():
        gmon = work / "gmon.out"
        samples = 0
        elapsed = 0.0
        for _ in range(calls):
            # Timed here: profile checks its time only after each block of 1024 reads.
            started = time.perf_counter()
            rig.tcl.run(f"profile {seconds} {gmon}")
            elapsed += time.perf_counter() - started
            _, _, buckets = rig_support.read_gmon(gmon)
            samples += sum(buckets)
        return samples, elapsed, 0.0
    return measured(rig, run)


def apreg_loop(rig, samples, batch=64):
    """DWT_PCSR as BD3 of the MEM-AP (TAR = 0xE0001010): per read, CSW (word, no increment)
    then BD3, each `apreg` one DAP run of its own."""
    dap = rig.tcl.run("dap names").split()[0]
    csw = int(rig.tcl.run(f"{dap} apreg 0 0x0").strip(), 0)
    word = (csw & ~0x37) | 0x02
    script = (f"{dap} apreg 0 0x4 0x{DWT_PCSR & ~0xF:x}; set _o {{}}; "
              f"for {{set _i 0}} {{$_i < {batch}}} {{incr _i}} "
              f"{{{dap} apreg 0 0x0 0x{word:x}; lappend _o [{dap} apreg 0 0x1c]}}; set _o")
    return script_loop(rig, script, samples)


def openocd_halt_loop(rig, samples):
    """mcuprof's halt script before the debug registers: OpenOCD's halt (its whole debug entry),
    get_reg and resume, one Tcl round trip a sample; the halted share by this script's clock
    (each round trip is a halt: a lower bound, the core runs briefly inside `resume`)."""
    def run():
        started = time.perf_counter()
        halted = 0.0
        for _ in range(samples):
            asked = time.perf_counter()
            rig.tcl.raw("halt; set _r [get_reg {pc lr sp xPSR}]; resume; set _r")
            halted += time.perf_counter() - asked
        return samples, time.perf_counter() - started, halted
    return measured(rig, run)


def plain_loop(rig, samples, batch=16):
    """mcuprof's read_memory batch of 16 without `capture`: OpenOCD's background polling
    runs between the reads (OpenOCD 0.12's command.c, jim_capture, is what holds it off)."""
    script = (f"set _o {{}}; for {{set _i 0}} {{$_i < {batch}}} {{incr _i}} "
              f"{{lappend _o [read_memory {DWT_PCSR} 32 1]}}; set _o")
    return script_loop(rig, script, samples)


def script_loop(rig, script, samples):
    """`script` (a Tcl script whose result is a list of PCs) run until it gave `samples`."""
    def run():
        started = time.perf_counter()
        got = 0
        while got < samples:
            # raw: the script's own result (`capture` would add each apreg's printed value to it)
            got += len(rig.tcl.raw(script).split())
        return got, time.perf_counter() - started, 0.0
    return measured(rig, run)


# Student's t, 97.5th percentile, by degrees of freedom (1-30; beyond, the normal's 1.96).
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def ratio_interval(ratios: list[float]) -> tuple[float, float, float]:
    """The geometric mean of paired rate ratios and its 95 % confidence interval (a t interval
    on their logarithms: the pairs are independent, each ratio is noisy in proportion)."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return math.exp(mean), float("nan"), float("nan")
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = (T_975[n - 2] if n - 1 <= len(T_975) else 1.96) * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--latencies", default="0,125us,1ms")
    parser.add_argument("--transport", default="dapdirect_swd", choices=("dapdirect_swd", "hla_swd"))
    parser.add_argument("--pcsr-samples", type=int, default=8192)
    parser.add_argument("--halt-samples", type=int, default=100)
    parser.add_argument("--stlink-samples", type=int, default=1000)
    parser.add_argument("--profile-seconds", type=int, default=2)
    parser.add_argument("--profile-calls", type=int, default=1,
                        help="`profile` calls per run, one after the other (3 x `profile 10` against 30000 samples: "
                             "the same number of calls as mcuprof makes)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shared-cpus", action="store_true",
                        help="QEMU on every CPU with the vprobe and the readers, its vCPU thread at their "
                             "priority (the figures before 2026-12-07's second table): the guest then takes the "
                             "probe's CPU after each resume (the vprobe waited ~5 ms for it), and QEMU's stop waits "
                             "out the guest's time slice")
    parser.add_argument("--methods",
                        default="profile,halt,halt-stacks,stlink,stlink-stacks,stlink-pcsr,stlink-pcsr-1024,halt-openocd,halt-budget,pcsr,pcsr-plain,pcsr-profile,apreg",
                        help="which to run (profile always runs: it is the reference)")
    parser.add_argument("--account", action="store_true",
                        help="instead: the USB commands of one `profile 0` and one long `profile` call, by kind")
    args = parser.parse_args()
    build = Path(args.build)
    cli = build / "mcuprof"
    elf = build / "firmware-ref" / "mixed_forever_m4.elf"
    if shutil.which(rig_support.OPENOCD) is None:
        sys.exit("openocd is not installed")
    rig_support.CLI = cli
    methods = ["profile"] + [m for m in args.methods.split(",") if m != "profile"]
    table = {}
    for latency in args.latencies.split(","):
        rig = Rig()
        rig.stlink_transport = args.transport
        rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-stlink-bench-"))
        results = {m: [] for m in methods}
        try:
            # By default QEMU on a CPU of its own, its vCPU thread below its gdbstub's thread
            # (openocd_rig.start_rig's apart and guest_below): a probe's commands wait for no host
            # scheduler, so neither may the model's.
            rig_support.start_rig(rig, elf, vprobe_options=("--latency", latency), apart=not args.shared_cpus,
                                  guest_below=not args.shared_cpus)
            if args.account:
                print(f"probe latency {latency}, {args.transport}:")
                account_profile(rig, args.profile_seconds)
                continue
            runners = {
                "profile": lambda: openocd_profile(rig, args.profile_seconds, rig.work, args.profile_calls),
                "halt": lambda: mcuprof_record(cli, elf, rig, "halt", args.halt_samples, rig.work),
                "halt-stacks": lambda: mcuprof_record(cli, elf, rig, "halt", args.halt_samples, rig.work, "--stacks"),
                "stlink": lambda: stlink_record(cli, elf, rig, args.stlink_samples, rig.work),
                "stlink-stacks": lambda: stlink_record(cli, elf, rig, args.stlink_samples, rig.work, "--stacks"),
                "stlink-pcsr": lambda: stlink_record(cli, elf, rig, args.pcsr_samples, rig.work, "--mode", "pcsr"),
                "stlink-pcsr-1024": lambda: stlink_record(cli, elf, rig, args.pcsr_samples, rig.work, "--mode", "pcsr",
                                                          "--batch", "1024"),
                "halt-openocd": lambda: openocd_halt_loop(rig, max(10, args.halt_samples // 10)),
                "pcsr": lambda: mcuprof_record(cli, elf, rig, "pcsr", args.pcsr_samples, rig.work),
                "halt-budget": lambda: mcuprof_record(cli, elf, rig, "halt", args.halt_samples // 4, rig.work,
                                                      "--max-halted", "25"),
                "pcsr-plain": lambda: plain_loop(rig, args.pcsr_samples // 4),
                "pcsr-profile": lambda: mcuprof_record(cli, elf, rig, "pcsr", args.pcsr_samples, rig.work,
                                                       "--pcsr-read", "profile"),
                "apreg": lambda: apreg_loop(rig, args.pcsr_samples // 8) if args.transport == "dapdirect_swd" else None,
            }
            for run in range(args.runs):
                # `profile` first in even runs, last in odd ones: a drift of the emulation's
                # speed over the session (the guest's state, the host's load) then weighs on
                # both sides of each pair alike instead of always on the later one.
                order = methods if run % 2 == 0 else methods[1:] + methods[:1]
                for method in order:
                    results[method].append(runners[method]())
        finally:
            rig_support.stop_rig(rig)
        table[latency] = {}
        for method, rows in results.items():
            # Each run's ratio to the `profile` run just before it: under a changing load the
            # pair saw about the same machine, where medians of separate runs may not have.
            paired = [r["rate"] / p["rate"] for r, p in zip(rows, results["profile"]) if r is not None and p is not None]
            rows = [r for r in rows if r is not None]
            if rows:
                table[latency][method] = {k: median([r[k] for r in rows]) for k in rows[0]}
                table[latency][method]["paired"] = paired

    qemu = subprocess.run([qemu_runner.QEMU, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"sampling through an ST-Link ({args.transport}) over mcuprof vprobe --stlink-port ({qemu}, "
          f"{'CPUs shared' if args.shared_cpus else 'QEMU apart, its guest below it'}, mixed_forever_m4), "
          f"OpenOCD 0.12, median of {args.runs} runs; profile: {args.profile_calls} x "
          f"`profile {args.profile_seconds}`; {args.pcsr_samples} PCSR samples")
    for latency, rows in table.items():
        base = rows["profile"]["rate"] if "profile" in rows else float("nan")
        print(f"  probe latency {latency}:")
        print("    %-14s %10s %12s %14s %12s   %s" % ("", "samples/s", "/ profile", "USB cmds/sample", "halted",
                                                    "each run / its profile run: median (min-max); "
                                                    "geometric mean [95 % CI]"))
        for method, r in rows.items():
            paired = r["paired"]
            mean, low, high = ratio_interval(paired)
            print("    %-14s %10.0f %12.2f %14.3f %11.1f%%   %.2f (%.2f-%.2f); %.3f [%.3f, %.3f]" % (
                method, r["rate"], r["rate"] / base, r["usb_per_sample"], 100 * r["halted_share"],
                median(paired), min(paired), max(paired), mean, low, high))
    print(json.dumps(table), file=sys.stderr)


if __name__ == "__main__":
    main()
