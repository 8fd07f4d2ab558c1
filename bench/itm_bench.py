#!/usr/bin/env python3
"""SWO parsing throughput: mcuprof against the seed's itm75a.py (shared/peers) and pyOCD's
SWOParser on the same synthetic capture (100 MB by default), in one run; prints MB/s and
the ratios. The three must agree on the PC sample sequence before any figure is printed.

    python3 bench/itm_bench.py --mcuprof build/mcuprof --elf build/firmware-ref/X.elf \\
        [--pyocd-src DIR] [--mb 100] [--runs 3]

mcuprof is timed end to end, as a user runs it (`mcuprof report CAPTURE --elf ELF`: process
start, ELF symbols, reading the file in chunks, parsing, attribution, the report); the
peers only for their parse function in this process, on bytes already in memory, with a
sink that keeps PCs (pyOCD) or the event list the seed builds. That favours the peers.
pyOCD comes from --pyocd-src / $MCUPROF_PYOCD_SRC (a source tree holding pyocd/trace/swo.py;
Debian's python3-pyocd 0.13 has none) and is left out when absent. It decodes about a
megabyte a second, so it runs on the first --pyocd-mb megabytes of the same capture
(default: all of it) and its MB/s is that of the part it read."""
import argparse
import hashlib
import importlib.util
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "peers", "itm75a.py"))
SYNC = bytes([0, 0, 0, 0, 0, 0x80])


def functions(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-n", "-S", "--defined-only", elf],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "Tt" and int(f[1], 16) >= 4:
            found.append((int(f[0], 16) & ~1, int(f[1], 16)))
    return found


def make_capture(elf, megabytes, path):
    """A capture as a busy SWO line gives it: PC samples, and between them sleep samples,
    printf bytes on stimulus port 0, word writes on port 1, local timestamps, exception
    entry and exit, counter wraps, overflows, and a sync packet every 2000 samples. No
    packet is one the peers misread (see tests/sources/test_swo_pyocd.py)."""
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
    h = hashlib.sha256()
    for pc in pcs:
        h.update(pc.to_bytes(4, "little"))
    return len(pcs), h.hexdigest()[:16]


def median(values):
    return sorted(values)[len(values) // 2]


def time_mcuprof(mcuprof, capture, elf, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([mcuprof, "report", capture, "--elf", elf, "--by", "address", "--format", "json"],
                                capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if result.returncode != 0:
            sys.exit("bench: mcuprof failed: %s" % result.stderr.strip())
    return median(times), result.stdout


def pcs_from_report(text):
    """The PC multiset from mcuprof's by-address report (the sequence is checked by the tests)."""
    import json
    rows = json.loads(text)["functions"]
    return {int(r["name"], 16): round(r["samples"]) for r in rows if r["name"].startswith("0x")}


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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcuprof", required=True)
    parser.add_argument("--elf", required=True)
    parser.add_argument("--mb", type=int, default=100, help="capture size in MB")
    parser.add_argument("--work", default="build/bench")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool; the median is reported")
    parser.add_argument("--pyocd-src", default=os.environ.get("MCUPROF_PYOCD_SRC", ""))
    parser.add_argument("--pyocd-mb", type=int, default=0, help="pyOCD parses this many MB of the capture (0: all)")
    parser.add_argument("--pyocd-runs", type=int, default=1)
    args = parser.parse_args()
    if not os.path.exists(SEED):
        sys.exit("bench: the seed's parser is not at %s" % SEED)
    os.makedirs(args.work, exist_ok=True)
    capture = os.path.join(args.work, "swo-%dMB.bin" % args.mb)
    if not os.path.exists(capture):
        make_capture(args.elf, args.mb, capture)
    with open(capture, "rb") as f:
        data = f.read()
    mb = len(data) / 1e6

    ours_s, report = time_mcuprof(args.mcuprof, capture, args.elf, args.runs)
    ours_pcs = pcs_from_report(report)
    seed_s, seed_pcs = time_seed(load_seed(), data, args.runs)
    n = sum(ours_pcs.values())
    counts = {}
    for pc in seed_pcs:
        counts[pc] = counts.get(pc, 0) + 1
    if counts != ours_pcs:
        sys.exit("bench: mcuprof and the seed disagree on the PC samples; no figure printed")
    print("SWO capture %.0f MB, %d PC samples; mcuprof and the seed agree on every address's count" % (mb, n))

    rows = [("mcuprof report (end to end)", mb, ours_s), ("seed itm75a.py parse()", mb, seed_s)]
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

    print("median of %d runs (pyOCD: %d)" % (args.runs, args.pyocd_runs))
    for name, size, seconds in rows:
        print("  %-30s %8.2f s  %9.1f MB/s" % (name, seconds, size / seconds))
    ours_rate = mb / ours_s
    for name, size, seconds in rows[1:]:
        print("  ratio: mcuprof is %.0f times faster than %s" % (ours_rate / (size / seconds), name.split()[0] +
                                                                   " " + name.split()[1]))
    print("  goal: 100 times the seed's script")


if __name__ == "__main__":
    main()
