#!/usr/bin/env python3
"""Start-up on a large firmware ELF: mcuprof against llvm-symbolizer and addr2line, in one run.

    python3 bench/startup_bench.py --build build [--runs 15]

The ELF is generated here (our own code, not a vendor's): C sources with thousands of
functions that inline helpers into loops (inline chains, location lists) and hundreds of struct
types per file, built with arm-none-eabi-gcc -O2 -g for netduinoplus2 (the reference
firmware's start-up code and linker script) into build/bench/startup/large.elf, once: more than
20 MB of DWARF, under 1 MB of code, a main that never returns. Each tool is asked the same
question (the function, file and line of one address, inline chain included) and their
answers are compared before any figure is printed:

- llvm-symbolizer-19 --obj ELF ADDR, addr2line -f -i -e ELF ADDR: the peers' whole start-up;
- mcuprof report of a one-sample dump (by function, and --by line);
- mcuprof record --gdb --samples 1 against QEMU's gdbstub running the image: the time to the
  first sample, as an upper bound (connect, the firmware check, one halt, the profile);
  the QEMU start is outside the timing.

Each figure is the median of --runs runs, the commands taking turns; the ratios are to llvm-symbolizer (goal: at most 2).
Benchmarks report figures; they assert nothing (the tests do that)."""
import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import qemu_runner
from timing import interleaved_medians

REPO = Path(__file__).resolve().parent.parent
FILES, FUNCTIONS, TYPES = 60, 64, 360   # about 22 MB of DWARF, 0.8 MB of code
HELPERS = 6
PROBE = "work_30_20"                    # the function whose address every tool is asked


def unit_source(f: int) -> str:
    out = ["#include <stdint.h>\n"]
    for s in range(4):
        out.append(f"struct rec{f}_{s} {{\n" + "".join(
            f"    uint32_t field{m}; int16_t delta{m}; uint8_t flag{m};\n" for m in range(12)) + "};\n")
    # Types that cost no code: one union of them all, reached by one pointer.
    for t in range(TYPES):
        out.append(f"struct shape{f}_{t} {{\n" + "".join(
            f"    uint32_t word{m}_{t}; uint16_t half{m}_{t}; uint8_t byte{m}_{t}[{m % 5 + 1}];\n"
            for m in range(16)) + "};\n")
    out.append(f"union shapes{f} {{\n" + "".join(f"    struct shape{f}_{t} s{t};\n" for t in range(TYPES)) + "};\n")
    out.append(f"union shapes{f} *shapes_{f};\n")
    out.append(f"static inline uint32_t mix{f}(uint32_t a, uint32_t b) "
               f"{{ return (a ^ (b << 3)) + (a >> 5) * 2654435761u; }}\n")
    for h in range(HELPERS):
        out.append(f"static inline uint32_t step{f}_{h}(uint32_t x, uint32_t y) {{ uint32_t lo = x & 0xffffu, "
                   f"hi = x >> 16; uint32_t z = mix{f}(lo + {h}u, hi ^ y); return z ^ (z >> {h + 1}); }}\n")
    out.append(f"static inline uint32_t fold{f}(const struct rec{f}_0 *r, uint32_t k) {{ uint32_t s = 0; "
               f"for (int i = 0; i < 3; ++i) s = mix{f}(s + r->field0, k + i); return s + r->delta1; }}\n")
    for i in range(FUNCTIONS):
        s = i % 4
        out.append(
            f"__attribute__((noinline)) uint32_t work_{f}_{i}(struct rec{f}_{s} *r, uint32_t n)\n{{\n"
            f"    uint32_t acc = n;\n"
            f"    for (uint32_t k = 0; k < (n & 7u); ++k) {{\n"
            f"        uint32_t t = mix{f}(acc, r->field{i % 12} + k);\n"
            f"        if (t & 1u) r->delta{(i + 1) % 12} += (int16_t)t; else r->flag{(i + 2) % 12} ^= (uint8_t)t;\n"
            f"        acc = fold{f}((const struct rec{f}_0 *)r, t) + acc;\n"
            f"        acc = step{f}_{i % HELPERS}(acc, t) + step{f}_{(i + 1) % HELPERS}(t, acc)"
            f" + step{f}_{(i + 3) % HELPERS}(acc ^ k, n);\n"
            f"    }}\n    return acc;\n}}\n")
    out.append(f"uint32_t unit_{f}(uint32_t n)\n{{\n    static struct rec{f}_0 r0; static struct rec{f}_1 r1; "
               f"static struct rec{f}_2 r2; static struct rec{f}_3 r3;\n    uint32_t acc = n;\n")
    out += [f"    acc = work_{f}_{i}(&r{i % 4}, acc);\n" for i in range(FUNCTIONS)]
    out.append("    return acc;\n}\n")
    return "".join(out)


def main_source() -> str:
    return ("#include <stdint.h>\n" + "".join(f"uint32_t unit_{f}(uint32_t);\n" for f in range(FILES)) +
            "int main(void)\n{\n    volatile uint32_t sink = 1;\n    for (;;) {\n" +
            "".join(f"        sink = unit_{f}(sink);\n" for f in range(FILES)) + "    }\n}\n")


def build_elf(build: Path, work: Path) -> Path:
    elf = work / "large.elf"
    stamp = work / "large.stamp"
    recipe = f"{FILES} {FUNCTIONS} {TYPES} {HELPERS} no-build-id"
    if elf.exists() and stamp.exists() and stamp.read_text() == recipe:
        return elf
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    sources = []
    for f in range(FILES):
        path = src / f"unit{f:03d}.c"
        path.write_text(unit_source(f))
        sources.append(path)
    (src / "main.c").write_text(main_source())
    sources.append(src / "main.c")
    firmware = REPO / "firmware-ref" / "src"
    sources += [firmware / "startup.c", firmware / "board.c"]
    flags = ["-mcpu=cortex-m4", "-mthumb", "-O2", "-g", "-std=c11", "-ffreestanding", "-ffunction-sections",
             "-fdata-sections", f"-I{firmware}"]
    print(f"building {elf} ({len(sources)} files, once)", flush=True)
    objects, running = [], []
    for source in sources:   # two compilers at a time: the machine is shared
        obj = work / (source.stem + ".o")
        running.append(subprocess.Popen(["arm-none-eabi-gcc", *flags, "-c", str(source), "-o", str(obj)]))
        objects.append(obj)
        if len(running) == 2:
            if running.pop(0).wait() != 0:
                sys.exit("bench: a compile failed")
    if any(p.wait() != 0 for p in running):
        sys.exit("bench: a compile failed")
    script = build / "firmware-ref-build" / "ld" / "stm32.ld"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostartfiles", "-nostdlib", f"-T{script}",
                    "-Wl,--gc-sections", *map(str, objects), "-o", str(elf), "-lgcc"], check=True)
    stamp.write_text(recipe)
    return elf


def section_sizes(elf: Path) -> tuple[int, int]:
    text = subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True, check=True).stdout
    dwarf = code = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            if parts[0].startswith(".debug_"):
                dwarf += int(parts[1])
            elif parts[0] == ".text":
                code += int(parts[1])
    return dwarf, code


def probe_address(elf: Path) -> int:
    nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == PROBE:
            return int(parts[0], 16) + 8   # inside the loop, in inlined code
    sys.exit(f"bench: no {PROBE} in {elf}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=15, help="runs of each command; the median is reported")
    args = parser.parse_args()
    build = Path(args.build).resolve()
    mcuprof = str(build / "mcuprof")
    work = build / "bench" / "startup"
    work.mkdir(parents=True, exist_ok=True)
    elf = build_elf(build, work)
    dwarf, code = section_sizes(elf)
    address = probe_address(elf)
    dump = work / "one.txt"
    dump.write_text(f"prof raw n=1\np {address:08x}\nend\n")

    timed = interleaved_medians({
        "symbolizer": ["llvm-symbolizer-19", f"--obj={elf}", hex(address)],
        "addr2line": ["addr2line", "-f", "-i", "-e", str(elf), hex(address)],
        "report": [mcuprof, "report", str(dump), "--elf", str(elf)],
        "by line": [mcuprof, "report", str(dump), "--elf", str(elf), "--by", "line"]}, args.runs)
    (symbolizer_s, symbolized), (addr2line_s, located) = timed["symbolizer"], timed["addr2line"]
    (report_s, reported), (by_line_s, by_line) = timed["report"], timed["by line"]

    # The same answer from all: the function the address lies in (the outermost frame, the
    # last name each peer prints) and the innermost line.
    peers_function = symbolized.split("\n\n")[0].splitlines()[-2]
    line = re.search(r"(\S+\.c):(\d+)", symbolized)
    if peers_function != PROBE or located.splitlines()[-2] != PROBE or not re.search(rf"\b{PROBE}\s*$", reported, re.M):
        sys.exit("bench: the tools disagree on the function:\n%s\n%s\n%s" % (symbolized, located, reported))
    if line is None or f"{os.path.basename(line.group(1))}:{line.group(2)}" not in by_line:
        sys.exit("bench: --by line does not give llvm-symbolizer's line:\n%s\n%s" % (symbolized, by_line))

    first_sample = []
    for _ in range(max(3, args.runs // 3)):   # a QEMU per run: the image is sampled once, from reset
        with qemu_runner.QemuRun(elf, "netduinoplus2", gdb=True, halted=True, uart=None, timeout=600) as q:
            record = [mcuprof, "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "1", "--elf", str(elf),
                      "-o", str(work / "one.rec")]
            start = time.perf_counter()
            result = subprocess.run(record, capture_output=True, text=True)
            first_sample.append(time.perf_counter() - start)
            if result.returncode != 0:
                sys.exit("bench: record failed: " + result.stderr.strip())
    first_sample_s = sorted(first_sample)[len(first_sample) // 2]

    load = os.getloadavg()[0]
    print(f"start-up on {elf.name}: {dwarf / 1e6:.1f} MB of DWARF, {code / 1e6:.2f} MB of code, "
          f"{FILES * FUNCTIONS} generated functions; the same function and line from every tool; "
          f"median of {args.runs} runs; load average {load:.1f} on {os.cpu_count()} cores")
    rows = [("llvm-symbolizer-19 (one address)", symbolizer_s), ("addr2line -f -i (one address)", addr2line_s),
            ("mcuprof report (1 sample)", report_s), ("mcuprof report --by line (1 sample)", by_line_s),
            (f"mcuprof record --gdb --samples 1 ({len(first_sample)} runs)", first_sample_s)]
    for name, seconds in rows:
        print("  %-44s %7.3f s  %5.2f x llvm-symbolizer" % (name, seconds, seconds / symbolizer_s))
    print("  goal: a one-sample report and the time to the first sample at most 2 x llvm-symbolizer")


if __name__ == "__main__":
    main()
