#!/usr/bin/env python3
"""Attribution throughput: mcuprof against the seed's script (shared/peers/prof75a.py) on
the same on-chip dump of 10 million samples, in one run; prints both and their ratio.

    python3 bench/attribution_bench.py --mcuprof build/mcuprof --elf build/firmware-ref/X.elf

The dump is made from the ELF's own functions (arm-none-eabi-nm), with a fixed seed, so
both tools attribute every sample; their per-function counts are compared before any
figure is printed."""
import argparse
import os
import random
import re
import sys

from elf_symbols import nm_symbols
from timing import median_run

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "peers", "prof75a.py"))


def functions(elf):
    return [(s.start, s.size, s.name) for s in nm_symbols(elf, "Tt") if s.size >= 4]


def make_dump(elf, samples, path):
    funcs = functions(elf)
    rng = random.Random(75)
    weights = [rng.random() ** 3 for _ in funcs]   # a few hot functions, a long tail
    chosen = rng.choices(funcs, weights=weights, k=samples)
    with open(path, "w") as out:
        out.write("prof raw n=%d\n" % samples)
        for k in range(0, samples, 8):
            words = ["%08x" % (start + 2 * rng.randrange(size // 2)) for start, size, _ in chosen[k:k + 8]]
            out.write("p " + " ".join(words) + "\n")
        out.write("end\n")


def counts_from_text(text, pattern):
    return {m.group(2): round(float(m.group(1))) for m in re.finditer(pattern, text, re.M)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcuprof", required=True)
    parser.add_argument("--elf", required=True)
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--work", default="build/bench")
    parser.add_argument("--runs", type=int, default=3, help="runs of each tool; the median is reported")
    args = parser.parse_args()
    if not os.path.exists(PEER):
        sys.exit("bench: the peer script is not at %s" % PEER)
    os.makedirs(args.work, exist_ok=True)
    dump = os.path.join(args.work, "dump-%d.txt" % args.samples)
    if not os.path.exists(dump):
        make_dump(args.elf, args.samples, dump)
    size_mb = os.path.getsize(dump) / 1e6

    ours_s, ours = median_run([args.mcuprof, "report", dump, "--elf", args.elf], args.runs)
    peer_s, peer = median_run([sys.executable, PEER, dump, args.elf], args.runs)

    mine = counts_from_text(ours, r"^\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+(\S+)$")
    theirs = counts_from_text(peer, r"^\s+[\d.]+ %\s+([\d.]+)\s+(\S+)$")
    # Weak aliases may be named differently (we prefer the global name, the seed the first
    # in nm's order), so the counts are compared as a multiset.
    if sorted(mine.values()) != sorted(theirs.values()):
        sys.exit("bench: the two tools disagree on the counts; no figure printed")

    print("attribution of %d samples (%.0f MB dump), %d functions, results identical; median of %d runs" %
          (args.samples, size_mb, len(mine), args.runs))
    print("  %-28s %8.2f s  %12.0f samples/s" % ("mcuprof report", ours_s, args.samples / ours_s))
    print("  %-28s %8.2f s  %12.0f samples/s" % ("seed prof75a.py", peer_s, args.samples / peer_s))
    print("  ratio: mcuprof is %.1f times faster (goal: 50)" % (peer_s / ours_s))


if __name__ == "__main__":
    main()
