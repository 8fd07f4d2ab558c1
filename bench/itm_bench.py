#!/usr/bin/env python3
"""SWO parsing throughput: mcuprof against the seed's itm75a.py (shared/peers) and pyOCD's
SWOParser on the same synthetic capture (100 MB by default), in one run; prints MB/s and the
ratios. The PC sample sequences must agree before any figure is printed.

    python3 bench/itm_bench.py --mcuprof build/mcuprof --elf build/firmware-ref/X.elf \\
        [--pyocd-src DIR] [--mb 100] [--runs 3]

Two comparisons:
- the parser: mcuprof's SWO reader in its own process (build/bench/itm_parse_timer: the
  file mapped, parsed, the PCs collected in order) against the peers' parse functions on
  bytes already in memory (the seed's parse() building its event list, pyOCD's
  SWOParser.parse() with a sink keeping the PCs). The goal is 100 times the seed.
- end to end, as a user runs each: `mcuprof report CAPTURE --elf ELF` (process start, ELF
  symbols, parse, attribution, the report) against `python3 itm75a.py parse CAPTURE > dump`
  (the seed's command line: parse and write the PCs as text, before any profile).
pyOCD comes from --pyocd-src / $MCUPROF_PYOCD_SRC (a source tree holding pyocd/trace/swo.py;
Debian's python3-pyocd 0.13 has none) and is left out when absent; it decodes about
1.5 MB/s, so it runs --pyocd-runs times (default 1) on the first --pyocd-mb MB (default all)."""
import argparse
import importlib.util
import os
import random
import subprocess
import sys
import time

from elf_symbols import nm_symbols

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "peers", "itm75a.py"))
SYNC = bytes([0, 0, 0, 0, 0, 0x80])


def functions(elf):
    return [(s.start, s.size) for s in nm_symbols(elf, "Tt") if s.size >= 4]


def make_capture(elf, megabytes, path):
    """A capture as a busy SWO line gives it: PC samples, and between them sleep samples,
    printf bytes on stimulus port 0, word writes on port 1, local timestamps, exception
    entry and exit, counter wraps, overflows, and a sync packet every 2000 samples. No
    packet is one the peers misread (see tests/inputs/test_swo_pyocd.py)."""
    rng = random.Random(756)
    funcs = functions(elf)
    weights = [rng.random() ** 3 for _ in funcs]
    addresses = [start + 2 * rng.randrange(max(size // 2, 1)) for start, size in rng.choices(funcs, weights, k=4096)]
    packets = [bytes([0x17]) + a.to_bytes(4, "little") for a in addresses]
    extras = {
        3: bytes([0x01, 0x41]),
        10: bytes([0x0B, 0x10, 0x27, 0x00, 0x00]),
        20: bytes([0x15, 0x00]),
        30: bytes([0xC0, 0x85, 0x12]),
        31: bytes([0x20]),
        45: bytes([0x0E, 0x0F, 0x10]),
        46: bytes([0x0E, 0x0F, 0x20]),
        57: bytes([0x05, 0x20]),
    }
    target = megabytes * 1_000_000
    with open(path, "wb") as out:
        out.write(SYNC)
        written = len(SYNC)
        k = 0
        while written < target:
            block = []
            for pc in rng.choices(packets, k=2000):
                block.append(pc)
                extra = extras.get(k % 64)
                if extra is not None:
                    block.append(extra)
                if k % 5000 == 2500:
                    block.append(b"\x70")
                k += 1
            block.append(SYNC)
            data = b"".join(block)
            out.write(data)
            written += len(data)
        out.write(b"\x70")   # pyOCD hands events over at an overflow or a timestamp


def digest(pcs):
    """The sum of (i + 1) * pc[i] modulo 2^64, as itm_parse_timer computes it."""
    return sum(i * pc for i, pc in enumerate(pcs, 1)) & (2 ** 64 - 1)


def median(values):
    return sorted(values)[len(values) // 2]


def load_seed():
    spec = importlib.util.spec_from_file_location("itm75a", SEED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_pyocd(source_dir):
    trace = os.path.join(source_dir or "", "pyocd", "trace")
    if source_dir and os.path.exists(os.path.join(trace, "swo.py")):
        spec = importlib.util.spec_from_file_location("_pyocd_trace", os.path.join(trace, "__init__.py"),
                                                      submodule_search_locations=[trace])
        package = importlib.util.module_from_spec(spec)
        sys.modules["_pyocd_trace"] = package
        spec.loader.exec_module(package)
        return importlib.import_module("_pyocd_trace.swo"), importlib.import_module("_pyocd_trace.events")
    try:
        from pyocd.trace import events, swo
        return swo, events
    except ImportError:
        return None


def time_seed(seed, data, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        events = seed.parse(data)
        times.append(time.perf_counter() - start)
        pcs = [e[1] for e in events if e[0] == "pc"]
        del events
    return median(times), pcs


def time_pyocd(modules, data, runs):
    swo, ev = modules

    class Core:
        def exception_number_to_name(self, number):
            return None

    class Sink:
        def __init__(self):
            self.pcs = []

        def receive(self, event):
            if isinstance(event, ev.TracePeriodicPC) and event.pc != 0:
                self.pcs.append(event.pc)

    times = []
    for _ in range(runs):
        sink = Sink()
        parser = swo.SWOParser(Core(), sink)
        start = time.perf_counter()
        parser.parse(data)
        times.append(time.perf_counter() - start)
    return median(times), sink.pcs


def time_command(command, runs, stdout=subprocess.DEVNULL):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit("bench: %s failed: %s" % (command[0], result.stderr.strip()))
    return median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcuprof", required=True)
    parser.add_argument("--timer", help="itm_parse_timer (default: bench/itm_parse_timer beside mcuprof)")
    parser.add_argument("--elf", required=True)
    parser.add_argument("--mb", type=int, default=100, help="capture size in MB")
    parser.add_argument("--work", default="build/bench")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool; the median is reported")
    parser.add_argument("--pyocd-src", default=os.environ.get("MCUPROF_PYOCD_SRC", ""))
    parser.add_argument("--pyocd-mb", type=int, default=0, help="pyOCD parses this many MB of the capture (0: all)")
    parser.add_argument("--pyocd-runs", type=int, default=1)
    args = parser.parse_args()
    timer = args.timer or os.path.join(os.path.dirname(os.path.abspath(args.mcuprof)), "bench", "itm_parse_timer")
    for path, what in ((SEED, "the seed's parser"), (timer, "itm_parse_timer"), (args.mcuprof, "mcuprof")):
        if not os.path.exists(path):
            sys.exit("bench: %s is not at %s" % (what, path))
    os.makedirs(args.work, exist_ok=True)
    capture = os.path.join(args.work, "swo-%dMB.bin" % args.mb)
    if not os.path.exists(capture):
        make_capture(args.elf, args.mb, capture)
    with open(capture, "rb") as f:
        data = f.read()
    mb = len(data) / 1e6

    # The parsers.
    out = subprocess.run([timer, capture, str(args.runs)], capture_output=True, text=True, check=True).stdout.split()
    ours = dict(zip(out[0::2], out[1::2]))
    ours_s = float(ours["seconds"])
    seed = load_seed()
    seed_s, seed_pcs = time_seed(seed, data, args.runs)
    if int(ours["pcs"]) != len(seed_pcs) or int(ours["digest"]) != digest(seed_pcs):
        sys.exit("bench: mcuprof and the seed disagree on the PC sequence; no figure printed")
    print("SWO capture %.0f MB, %d PC samples, %s sleep; mcuprof's and the seed's PC sequences are equal" %
          (mb, len(seed_pcs), ours["sleep"]))
    rows = [("mcuprof SWO reader", mb, ours_s), ("seed itm75a.py parse()", mb, seed_s)]
    modules = load_pyocd(args.pyocd_src)
    if modules is not None:
        part = data if args.pyocd_mb == 0 else data[:args.pyocd_mb * 1_000_000]
        pyocd_s, pyocd_pcs = time_pyocd(modules, part, args.pyocd_runs)
        if pyocd_pcs != seed_pcs[:len(pyocd_pcs)] or (args.pyocd_mb == 0 and len(pyocd_pcs) != len(seed_pcs)):
            sys.exit("bench: pyOCD's PC sequence differs from the seed's; no figure printed")
        print("pyOCD's PC sequence equals the seed's over the %.0f MB it parsed" % (len(part) / 1e6))
        rows.append(("pyOCD SWOParser.parse()", len(part) / 1e6, pyocd_s))
    else:
        print("pyOCD: not run (no pyocd/trace/swo.py; set --pyocd-src or MCUPROF_PYOCD_SRC)")
    del seed_pcs

    # End to end.
    report_s = time_command([args.mcuprof, "report", capture, "--elf", args.elf], args.runs)
    dump = os.path.join(args.work, "swo-dump.txt")
    with open(dump, "w") as sink:
        seed_cli_s = time_command([sys.executable, SEED, "parse", capture], args.runs, stdout=sink)
    os.remove(dump)

    print("parsers, median of %d runs (pyOCD: %d):" % (args.runs, args.pyocd_runs))
    for name, size, seconds in rows:
        print("  %-32s %8.2f s  %9.1f MB/s" % (name, seconds, size / seconds))
    for name, size, seconds in rows[1:]:
        print("  ratio: mcuprof's parser is %.0f times faster than %s" % ((mb / ours_s) / (size / seconds), name))
    print("  goal: 100 times the seed's")
    print("end to end, median of %d runs:" % args.runs)
    print("  %-32s %8.2f s  %9.1f MB/s" % ("mcuprof report --elf", report_s, mb / report_s))
    print("  %-32s %8.2f s  %9.1f MB/s" % ("seed itm75a.py parse > dump", seed_cli_s, mb / seed_cli_s))
    print("  ratio: mcuprof report is %.0f times faster (and gives the profile, not a dump)" % (seed_cli_s / report_s))


if __name__ == "__main__":
    main()
