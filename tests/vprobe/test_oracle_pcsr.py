"""The PCSR paths that read back to back, against the census of each recording's own window:
`record --openocd --mode pcsr --pcsr-read profile` (OpenOCD's `profile` in chunks, mcuprof's
samples file), and OpenOCD's own `profile` read by `mcuprof report gmon.out`.

QEMU runs the truth plugin at uniform cost (2000 ns of host time an instruction, one instruction
per translation block, firmware-ref/truth/truth.c) and publishes each vCPU's current instruction
in its PC file, from which the vprobe answers DWT_PCSR without halting QEMU (vprobe --pc-file,
docs/vprobe.md "DWT_PCSR without a halt"). The reference is the window's PC-read census (the
plugin's FILE.pcsr: the host time each address was the published PC, which is what a read at a
wall-clock instant returns; its halt census FILE.time is printed beside).

QEMU and the reader are kept apart (start_rig(apart=True)): QEMU's threads on one CPU, this
process, the vprobe, OpenOCD and the recording on the others. Together, on a loaded host, the
reads under-read tick_smooth, the code that runs first after each SysTick: QEMU's main loop
wakes at every timer event, takes the reader's CPU, and the reader then waits behind the host's
other runnable tasks for milliseconds, the very milliseconds tick_smooth runs (docs/vprobe.md,
"Reads apart from QEMU", measured with tests/vprobe/measure_pcsr_apart.py). Apart, nothing of
QEMU's takes the reader's CPU, and what else does runs at instants that know nothing of the
guest. MCUPROF_ORACLE_PCSR_TOGETHER=1 runs the same test without keeping them apart (a
measurement, not the gate).

The errors are honest ones for reads that follow one another:
- profile chunks: the report's own, from the spread between chunks (docs/live.md, "Error bars
  of correlated reads"), each chunk a burst of 1024 reads after a random wait;
- gmon.out: a file keeps no order or passes, so its binomial errors are lower bounds (the report
  says so). Here FILES `profile` calls each write their own gmon.out, each call a cluster, and
  the test takes the pooled share's error from the spread between the files (the same ratio
  estimator, computed here from each file's `mcuprof report`), not from the report.

Asserted: every function of at least MIN_SHARE of the window's PC-read census within 4 of those
standard errors (at the true share, times the row's ratio of its error to the binomial one, as
vprobe.record_openocd holds bursts), after the reference itself: each window begins past the
guest's start (past_start) and its PC-read census holds no more host time than the window's wall
time (check_census). Each `profile` call ends at OpenOCD's cap of 10000 reads,
and the recording at its sample count: no run ends by wall time. Ports are chosen at run time;
every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from openocd_rig import CLI, OPENOCD, STRICT, cpus_apart, elf_symbol, read_gmon, require, start_rig, stop_rig

IMAGE = "fpu_frshape_fast_forever_o2_m4"
COST_NS = 2000
Z = 4.0
MIN_SHARE = 0.01
CHUNK = 1024
CHUNKS = 96
FILES = 32
PROFILE_CAP = 10000   # OpenOCD 0.12's most samples a `profile` call takes (target.c)


def by_function(window: dict[int, int]) -> dict[str, int]:
    return dict(fwtest.by_function(window, fwtest.symbols(IMAGE)))


def censuses(before, after) -> dict[str, dict[str, int]]:
    """The window's PC-read census and halt census by function ("pcsr", "time")."""
    return {"pcsr": by_function(qemu_runner.census_window(before["pcsr"], after["pcsr"])),
            "time": by_function(qemu_runner.census_window(before["time"], after["time"]))}


def check_census(test) -> None:
    """The reference itself: the window's PC-read census is host time of the plugin's clock
    (CLOCK_MONOTONIC, Python's monotonic clock), so it cannot hold more than the wall time from
    the first snapshot's request to the second's file. Once (QEMU 10, 2026-12-06, a window that
    held the guest's start) it gave Reset_Handler over 10^4 times the rest: the plugin's charge
    had wrapped (fixed since, firmware-ref/truth/truth.c charge_shown), not a read's error; a
    census like that fails here, as what it is, not as a share's z of -737082."""
    census = sum(test.window["pcsr"].values())
    test.assertLessEqual(census, test.wall_ns, f"the PC-read census of the window holds {census} ns in "
                         f"{test.wall_ns} ns of wall time: {sorted(test.window['pcsr'].items(), key=lambda kv: -kv[1])[:3]}")


def past_start(qemu) -> None:
    """Until the guest runs its tasks and ticks: a window begins there, not at the guest's start,
    which the rig may leave for the first snapshot to see (QEMU waits at -S until the vprobe lets
    it run, and a snapshot asked for meanwhile is served at the first instruction; the start's
    copy loops would then be in the window, and they made the plugin's charge wrap once,
    firmware-ref/truth/truth.c charge_shown). Ends by the guest's own count, SysTick_Handler's."""
    low, high = fwtest.symbols(IMAGE).range("SysTick_Handler")
    deadline = time.monotonic() + 120
    while not any(low <= address < high for address in qemu.snapshot()):
        if time.monotonic() > deadline:
            raise AssertionError("the guest ran no SysTick_Handler within 120 s of the rig's start")
        time.sleep(0.05)


def snapshot(qemu) -> dict[str, dict[int, int]]:
    _, times = qemu.snapshot_and_times()
    return {"time": times, "pcsr": qemu.snapshot_shown()}


def errors_and_summary(observed: dict[str, float], window: dict[str, dict[str, int]], ratios: dict[str, float],
                       largest: float, reads: int) -> tuple[dict[str, float], str]:
    """Each census row's standard error (at its true share, times its ratio to the binomial
    error) and a line of the eight largest rows: % read / PC-read census / halt census, and the
    worst z against each census."""
    truth, halts = window["pcsr"], window["time"]
    total, total_halts = sum(truth.values()), sum(halts.values())
    se = {name: ratios.get(name, largest) * math.sqrt(n / total * (1 - n / total) / reads)
          for name, n in truth.items()}
    shares = ", ".join(f"{name} {100 * observed.get(name, 0):.2f}/{100 * n / total:.2f}"
                       f"/{100 * halts.get(name, 0) / total_halts:.2f}"
                       for name, n in sorted(truth.items(), key=lambda kv: -kv[1])[:8])
    return se, (f"{shares} (% read/PC-read census/halt census); worst z against the PC-read census "
                f"{worst(observed, truth, se)}, the halt census {worst(observed, halts, se)}")


def conditions(test) -> str:
    """Apart or together, and the host's load average when the window ended."""
    return f"{'apart' if test.apart else 'together'}, load {test.load:.1f}"


def worst(observed: dict[str, float], truth: dict[str, int], se: dict[str, float]) -> tuple:
    """The row of at least MIN_SHARE of `truth` furthest from it in its own errors: (name, z)."""
    total = sum(truth.values())
    zs = [(name, (observed.get(name, 0.0) - n / total) / se[name]) for name, n in truth.items()
          if n / total >= MIN_SHARE and se.get(name)]
    name, z = max(zs, key=lambda nz: abs(nz[1]))
    return name, round(z, 2)


class Rig:
    """QEMU (uniform cost, the PC file), the vprobe over JTAG and OpenOCD, for one class."""

    @classmethod
    def start(cls, prefix: str):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, fwtest.elf_path(IMAGE)))
        cls.apart = not os.environ.get("MCUPROF_ORACLE_PCSR_TOGETHER")
        if cls.apart:
            try:
                cpus_apart()
            except ValueError as e:   # one CPU: the reads cannot be kept from QEMU's timer work
                if STRICT:
                    raise AssertionError(str(e)) from e
                raise unittest.SkipTest(str(e)) from e
        cls.work = Path(tempfile.mkdtemp(prefix=prefix))
        start_rig(cls, fwtest.elf_path(IMAGE), truth=cls.work / "truth.txt", uniform_cost_ns=COST_NS, pc_file=True,
                  apart=cls.apart)


class ProfileChunks(Rig, unittest.TestCase):
    """`record --mode pcsr --pcsr-read profile --batch 1024`: CHUNKS `profile` calls of one pass
    each, 100 ms apart on average (exponential waits), the recording ended by its sample count."""

    @classmethod
    def setUpClass(cls):
        cls.start("mcuprof-oracle-chunks-")
        try:
            past_start(cls.qemu)
            cls.wall_ns = -time.monotonic_ns()
            before = snapshot(cls.qemu)
            started = time.monotonic()
            cls.run_ = subprocess.run(
                [str(CLI), "record", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "pcsr", "--pcsr-read",
                 "profile", "--batch", str(CHUNK), "--interval", "100ms", "--samples", str(CHUNK * CHUNKS),
                 "--seed", "11", "--elf", str(fwtest.elf_path(IMAGE)), "-o", str(cls.work / "chunks.rec"),
                 "--format", "json"], capture_output=True, text=True, timeout=900)
            cls.seconds = time.monotonic() - started
            cls.window = censuses(before, snapshot(cls.qemu))
            cls.wall_ns += time.monotonic_ns()
            cls.load = os.getloadavg()[0]
        finally:
            stop_rig(cls)

    def test_every_function_within_4_chunk_errors_of_its_window(self):
        check_census(self)
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        doc = json.loads(self.run_.stdout)
        self.assertEqual(doc["samples"], CHUNK * CHUNKS)
        self.assertEqual((doc["errors"]["method"], doc["errors"]["bursts"]), ("bursts", CHUNKS))
        ratios, largest = fwtest.burst_ratios(doc)
        observed = {row["name"]: row["percent"] / 100 for row in doc["functions"] if row["samples"]}
        truth = self.window["pcsr"]
        _, summary = errors_and_summary(observed, self.window, ratios, largest, doc["samples"])
        print(f"\nprofile chunks ({CHUNKS} of {CHUNK}, {self.seconds:.1f} s, {conditions(self)}): {summary}; largest error ratio "
              f"{largest:.1f}", file=sys.stderr)
        self.assertEqual(fwtest.beyond_se(observed, fwtest.fractions(truth), doc["samples"], min_share=MIN_SHARE,
                                          z=Z, ratios=ratios, default_ratio=largest), [])


class GmonFiles(Rig, unittest.TestCase):
    """OpenOCD's own `profile` over the ELF's text, FILES calls, each writing its own gmon.out
    and ending at OpenOCD's cap of 10000 reads, read by `mcuprof report`; the pooled shares
    against the window's census, with errors from the spread between the files."""

    @classmethod
    def setUpClass(cls):
        cls.start("mcuprof-oracle-gmon-")
        elf = fwtest.elf_path(IMAGE)
        cls.text = (elf_symbol(elf, "__text_start"), elf_symbol(elf, "__text_end"))
        cls.files = []
        try:
            past_start(cls.qemu)
            cls.wall_ns = -time.monotonic_ns()
            before = snapshot(cls.qemu)
            started = time.monotonic()
            for k in range(FILES):
                gmon = cls.work / f"gmon-{k}.out"
                # 600 s is never reached: the call ends at its 10000th read (asserted below).
                cls.tcl.run(f"profile 600 {gmon} 0x{cls.text[0]:x} 0x{cls.text[1]:x}")
                cls.files.append(gmon)
            cls.seconds = time.monotonic() - started
            cls.window = censuses(before, snapshot(cls.qemu))
            cls.wall_ns += time.monotonic_ns()
            cls.load = os.getloadavg()[0]
            # Read here: stop_rig removes the work folder.
            cls.reports, cls.gmon = [], []
            for gmon in cls.files:
                r = subprocess.run([str(CLI), "report", str(gmon), "--elf", str(elf), "--format", "json"],
                                   capture_output=True, text=True, timeout=60)
                cls.reports.append(r)
                cls.gmon.append(read_gmon(gmon))
        finally:
            stop_rig(cls)

    def test_pooled_shares_within_4_between_file_errors_of_the_window(self):
        check_census(self)
        per_file = []
        for gmon, (low, high, buckets), r in zip(self.files, self.gmon, self.reports):
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(r.stdout)
            # Back-to-back reads with no passes in the file: the report's binomial errors are lower bounds.
            self.assertEqual((doc["errors"]["method"], doc["errors"]["lower_bounds"]), ("binomial", True))
            self.assertEqual((low, high), self.text)
            self.assertEqual(sum(buckets), PROFILE_CAP, f"{gmon.name}: the call did not end at its cap")
            self.assertEqual(doc["samples"], PROFILE_CAP)
            per_file.append({row["name"]: row["samples"] for row in doc["functions"] if row["samples"]})
        # The ratio estimator of cluster sampling (Cochran 6.13), each file a cluster of m_c reads:
        # p = sum y_c / sum m_c, var(p) = k / (k - 1) * sum (y_c - p m_c)^2 / (sum m_c)^2.
        k, reads = len(per_file), PROFILE_CAP * len(per_file)
        names = set().union(*per_file) | set(self.window["pcsr"])
        pooled = {name: sum(f.get(name, 0) for f in per_file) / reads for name in names}
        ratios = {}
        for name in names:
            p = pooled[name]
            var = k / (k - 1) * sum((f.get(name, 0) - p * PROFILE_CAP) ** 2 for f in per_file) / reads ** 2
            binomial = math.sqrt(p * (1 - p) / reads)
            if binomial > 0:
                ratios[name] = math.sqrt(var) / binomial
        largest = max(ratios.values())
        truth = self.window["pcsr"]
        _, summary = errors_and_summary(pooled, self.window, ratios, largest, reads)
        print(f"\ngmon.out ({FILES} profile calls of {PROFILE_CAP} reads, {self.seconds:.1f} s, {conditions(self)}): "
              f"{summary}; "
              f"between-file error over the binomial one up to {largest:.1f}", file=sys.stderr)
        self.assertEqual(fwtest.beyond_se(pooled, fwtest.fractions(truth), reads, min_share=MIN_SHARE, z=Z,
                                          ratios=ratios, default_ratio=largest), [])


if __name__ == "__main__":
    unittest.main()
