"""Both cores of a two-core chip through the vprobe (issue 29): QEMU's mps2-an521 (two Cortex-M33)
running our own two-core image (firmware-ref/src/scen_dual.c), `mcuprof vprobe` in front of its
gdbstub with each core behind an access port of its own (core 0 on AP0, core 1 on AP1), and the
real OpenOCD configured with two cortex_m targets on that DAP (the test's own `target create`).

- OpenOCD examines both targets, each as a Cortex-M33.
- Halting both, OpenOCD's `reg pc` of each target is that vCPU's own PC as QEMU's monitor shows
  it (`info registers -a`, QMP), and lies in that core's own code (scen_dual.c: core 0 runs main,
  core0_round, c0_*, shared_step; core 1 core1_*, c1_*, shared_step).
- The gdbstub is all-stop: halting one core stops QEMU's whole machine (QMP `query-status`), the
  other core still shown running to OpenOCD; the machine runs again only once both are resumed.
- A core's `step` moves that core alone: the other core's PC (halted) stays where it was.
- All of it over JTAG (remote_bitbang) and over the emulated ST-Link's dapdirect_swd.

- `record --openocd --mode pcsr` reads both cores' DWT_PCSR in every round of its batches: held
  to each core's window as halt mode is (below), with one round a batch.
- `record --openocd --mode halt` samples both cores at each halt (core 0 the current target, core 1
  the other examined cortex_m target, halted in the same script): QEMU runs the truth plugin at a
  uniform cost per instruction without -icount (each vCPU a thread of its own, as in
  tests/live/test_multicore.py), and each core's shares are held within 4 standard errors of the
  census of its own window (per-core snapshots just before and after the recording), with N that
  core's samples. The recording ends by its sample count; the image never ends. No core is
  reported as not sampled.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import collections
import json
import math
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
import run_header
from openocd_rig import (CLI, OPENOCD, UNIFORM_COST_NS, RigClass, elf_functions, elf_symbol, require, start_rig,
                         stop_rig)
from stack_checks import DUAL_CHAINS, check_dual_chains, recorded_chains

IMAGE = "dual_forever_an521"
# Core 1 on access port 1; the last target created is OpenOCD's current one: `targets` makes core 0
# current again.
SECOND_CORE = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1 -gdb-port disabled",
               "targets qemu.cpu")
TARGETS = ("qemu.cpu", "qemu.cpu1")
CORE_CODE = ({"main", "core0_round", "c0_heavy", "c0_light", "shared_step"},
             {"core1_main", "core1_reset", "core1_round", "c1_alpha", "c1_beta", "shared_step"})
HALTS = 6
RECORDED_HALTS = 1000
Z = 4.0
MIN_SHARE = 0.005   # below it a share is only bounded from above


def recorded_spreads(path: Path) -> list[tuple[int, int]]:
    """Each halt's spread of the cores' stops as the recording's samples carry it, read here from its
    bytes (docs/formats.md): a sample of core 1, 2, ... of 40 bytes ends with the bounds (ns) of its
    stop after core 0's; a halt's spread is its latest core's (the largest lower and upper bound)."""
    data = path.read_bytes()
    at = run_header.records_start(data, str(path))
    spreads: list[list[int]] = []
    while at + 8 <= len(data):
        kind, size = struct.unpack_from("<HH", data, at)
        payload = data[at + 8:at + 8 + size]
        at += 8 + size
        if kind != 1:
            continue
        core = struct.unpack_from("<I", payload, 28)[0] >> 8 & 0xFF
        if core == 0:
            spreads.append([0, 0])
        elif size >= 40:
            low, high = struct.unpack_from("<II", payload, 32)
            spreads[-1] = [max(spreads[-1][0], low), max(spreads[-1][1], high)]
    return [(low, high) for low, high in spreads]


def nearest_rank(values: list[float], q: float) -> float:
    """The percentile as the reports compute it (core::percentiles): rank q(n - 1), rounded."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def function_at(functions: dict[str, tuple[int, int]], pc: int) -> str | None:
    return next((name for name, (start, end) in functions.items() if start <= pc < end), None)


class TwoCoresThroughOpenOCD(RigClass, unittest.TestCase):
    """Over JTAG (remote_bitbang, qemu-vprobe.cfg)."""
    stlink_transport = None
    targets = TARGETS
    commands = SECOND_CORE
    work_prefix = "mcuprof-vprobe-cores-"

    @classmethod
    def requirements(cls):
        require((OPENOCD,), (CLI, fwtest.elf_path(IMAGE)))

    @classmethod
    def with_rig(cls):
        elf = fwtest.elf_path(IMAGE)
        cls.functions = elf_functions(elf)
        cls.core1_rounds = elf_symbol(elf, "core1_rounds")
        # No DWT_PCSR is read here: the vprobe as before its PC file (with it, on QEMU 10.0.2,
        # a read of core 1's counter while the cores ran failed with a sticky error in the
        # first run; not yet explained).
        start_rig(cls, elf, openocd_commands=cls.commands, pc_file=False)

    def on(self, target: str, command: str) -> str:
        return self.tcl.run(f"targets {target}; {command}")

    def pc(self, target: str) -> int:
        return int(re.search(r"pc \(/32\): (0x[0-9a-f]+)", self.on(target, "reg pc")).group(1), 16)

    def qemu_pcs(self) -> list[int]:
        """Each vCPU's R15 as QEMU's monitor prints it, CPU#0 first."""
        text = self.qemu.qmp("human-monitor-command", **{"command-line": "info registers -a"})
        return [int(v, 16) for v in re.findall(r"R15=([0-9a-f]{8})", text)]

    def machine_running(self) -> bool:
        return bool(self.qemu.qmp("query-status")["running"])

    def wait_machine_running(self) -> None:
        """Until QEMU runs: the vprobe's 'c' and this QMP query reach QEMU on two sockets, in either
        order. A bound for a loaded machine; it takes well under a millisecond."""
        deadline = time.monotonic() + 60
        while not self.machine_running():
            self.assertLess(time.monotonic(), deadline, "QEMU did not run within 60 s of both resumes")
            time.sleep(0.01)

    def state(self, target: str) -> str:
        """OpenOCD's state of the target after a poll of it: curstate alone says 'unknown' until
        OpenOCD's background poll has reached the target, which a loaded host delays."""
        return self.tcl.run(f"{target} arp_poll; {target} curstate").strip()

    def wait_core1_started(self) -> None:
        """Until core 1 (released by core 0 at start-up) has finished a round: a bound for a
        loaded machine, the event takes microseconds."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            words = self.on(self.targets[0], f"read_memory {self.core1_rounds:#x} 32 1").split()
            if int(words[-1], 0) > 0:
                return
            time.sleep(0.05)
        self.fail("core 1 did not finish a round within 120 s")

    def test_1_both_cores_examined(self):
        self.assertIn("core 0 on AP0, core 1 on AP1", self.vprobe_log[0])
        log = (self.work / "openocd.log").read_text()
        for target in self.targets:
            self.assertIn(f"[{target}] Cortex-M33", log)
            self.assertEqual(self.state(target), "running")

    def test_2_each_core_pc_is_its_own(self):
        self.wait_core1_started()
        core0, core1 = self.targets
        for _ in range(HALTS):
            self.on(core0, "halt")
            # All-stop: the whole machine stopped, core 1 still running for OpenOCD (stalled).
            self.assertFalse(self.machine_running())
            self.assertEqual(self.state(core1), "running")
            self.on(core1, "halt")
            pcs = [self.pc(target) for target in self.targets]
            self.assertEqual(pcs, self.qemu_pcs())
            for core, pc in enumerate(pcs):
                self.assertIn(function_at(self.functions, pc), CORE_CODE[core], f"core {core} pc {pc:#x}")
            # A core's step moves that core alone. OpenOCD's default `maskisr auto` steps by
            # resuming to a breakpoint at the PC, which a core cannot reach while the other's halt
            # stops the machine: `steponly` steps with C_STEP (docs/vprobe.md, "Two cores").
            self.on(core1, "cortex_m maskisr steponly; step")
            self.assertEqual(self.pc(core0), pcs[0])
            self.assertEqual(self.qemu_pcs()[0], pcs[0])
            self.assertEqual(self.pc(core1), self.qemu_pcs()[1])
            # The machine runs once every halted core is resumed.
            self.on(core1, "resume")
            self.assertFalse(self.machine_running())
            self.on(core0, "resume")
            self.wait_machine_running()
            for target in self.targets:
                self.assertEqual(self.state(target), "running")
            time.sleep(0.02)



class TwoCoresThroughStlink(TwoCoresThroughOpenOCD):
    """The same over the emulated ST-Link's dapdirect_swd (qemu-stlink.cfg: OpenOCD's own ADIv5
    code, the AP named in every DAP and memory command; hla_swd reaches AP0 only)."""
    stlink_transport = "dapdirect_swd"
    targets = ("stm32f4x.cpu", "stm32f4x.cpu1")
    commands = ("target create stm32f4x.cpu1 cortex_m -dap stm32f4x.dap -ap-num 1 -gdb-port disabled",
                "targets stm32f4x.cpu")


def beyond_z(sampled: dict[str, int], n: int, window: dict[str, int]) -> tuple[list, str]:
    """The functions whose sampled share is beyond Z standard errors, sqrt(p(1-p)/n), of their share
    p of the window's census (under MIN_SHARE: above MIN_SHARE + Z SE), and every share shown."""
    total = sum(window.values())
    bad, shown = [], []
    for name in sorted(set(window) | set(sampled), key=lambda k: -window.get(k, 0)):
        p, q = window.get(name, 0) / total, sampled.get(name, 0) / n
        shown.append(f"{name} {100 * q:.2f}/{100 * p:.2f}")
        if p < MIN_SHARE:
            if q >= MIN_SHARE + Z * math.sqrt(MIN_SHARE / n):
                bad.append((name, round(100 * q, 2), round(100 * p, 2)))
        elif abs(q - p) > Z * math.sqrt(p * (1 - p) / n):
            bad.append((name, round(100 * q, 2), round(100 * p, 2), round((q - p) / math.sqrt(p * (1 - p) / n), 2)))
    return bad, ", ".join(shown)


class RecordBothCoresThroughOpenOCD(unittest.TestCase):
    """`record --openocd --mode halt`: one Tcl script halts both cores."""
    openocd_commands = SECOND_CORE
    openocd_gdb = False
    recorded_halts = RECORDED_HALTS
    pc_file = True   # the rig's DWT_PCSR from the truth plugin's PC file (openocd_rig.start_rig)

    @classmethod
    def link(cls) -> list[str]:
        return ["--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt"]

    @classmethod
    def setUpClass(cls):
        elf = fwtest.elf_path(IMAGE)
        require((OPENOCD,), (CLI, elf))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-cores-rig-"))
        cls.out = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-cores-record-"))
        try:
            start_rig(cls, elf, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS, icount_shift=None,
                      openocd_commands=cls.openocd_commands, openocd_gdb=cls.openocd_gdb, pc_file=cls.pc_file)
            before = cls.qemu.snapshot_by_core()
            cls.recording = subprocess.run(
                [str(CLI), "record", *cls.link(),
                 "--samples", str(cls.recorded_halts), "--interval", "5ms", "--seed", "29", "--elf", str(elf),
                 "-o", str(cls.out / "dual.rec"), "--format", "json"], capture_output=True, text=True, timeout=1800)
            after = cls.qemu.snapshot_by_core()   # the guest left running: a snapshot needs a running vCPU
        finally:
            stop_rig(cls)   # removes cls.work; the recording is in cls.out
        cls.vprobe_reader.join(timeout=60)   # the vprobe's counters, printed as it ends
        skew = [line.strip() for line in cls.vprobe_log if "halts of a core after another's" in line]
        print(f"\n{cls.__name__}: {skew}", file=sys.stderr)
        functions = fwtest.symbols(IMAGE)
        cls.windows = {core: dict(fwtest.by_function(qemu_runner.census_window(before[core], after[core]), functions))
                       for core in before}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_each_core_within_4_se_of_its_window(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        doc = json.loads(self.recording.stdout)
        self.assertEqual(doc["samples"], 2 * self.recorded_halts)   # one sample per core at each halt
        cores = {c["core"]: c for c in doc["cores"]}
        self.assertEqual(sorted(cores), [0, 1])
        self.assertEqual(sorted(self.windows), [0, 1])
        for core, window in self.windows.items():
            self.assertEqual(cores[core]["samples"], self.recorded_halts)
            sampled = {r["name"]: r["samples"] for r in cores[core]["functions"]}
            bad, shown = beyond_z(sampled, self.recorded_halts, window)
            print(f"\ncore {core}: {shown} (% sampled/exact); beyond 4 SE: {bad}", file=sys.stderr)
            self.assertEqual(bad, [], f"core {core}")

    def test_both_cores_named_none_unsampled(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        report = subprocess.run([str(CLI), "report", str(self.out / "dual.rec"), "--elf",
                                 str(fwtest.elf_path(IMAGE))], capture_output=True, text=True, timeout=300)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn(f"core 0 (qemu.cpu): samples {self.recorded_halts}", report.stdout)
        self.assertIn(f"core 1 (qemu.cpu1): samples {self.recorded_halts}", report.stdout)
        self.assertNotIn("not sampled", report.stdout)
        self.assertNotIn("not sampled", self.recording.stderr)

    def test_skew_carried_and_within_its_bounds(self):
        """Each halt's spread of the cores' stops is in the recording (its bounds, per sample of core
        1), the report's figures are those bounds' percentiles, and the vprobe's own measure of the
        same halts (the time from the halt that stopped the machine to core 1's halt request, its
        median and p99) lies between the bounds at the same rank: every halt's true spread lies
        between its bounds, so each order statistic does too."""
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        spreads = recorded_spreads(self.out / "dual.rec")
        n = len(spreads)
        self.assertEqual(n, self.recorded_halts)
        for low, high in spreads:
            self.assertLessEqual(low, high)
        stops = json.loads(self.recording.stdout)["core_stops"]
        self.assertFalse(stops["simultaneous"])
        self.assertEqual(stops["halts"], n)
        for key, values in (("at_least_us", [low / 1000 for low, _ in spreads]),
                            ("at_most_us", [high / 1000 for _, high in spreads])):
            for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
                self.assertAlmostEqual(stops[key][name], nearest_rank(values, q), places=6, msg=f"{key} {name}")
            self.assertAlmostEqual(stops[key]["max"], max(values), places=6)
        line = next(line for line in self.vprobe_log if "halts of a core after another's" in line)
        count, p50, p99 = re.search(r"(\d+) halts of a core after another's: their halt requests (\d+) us apart "
                                    r"\(p50\), (\d+) us \(p99\)", line).groups()
        self.assertEqual(int(count), n, line)
        lows, highs = sorted(low for low, _ in spreads), sorted(high for _, high in spreads)
        for q, shown in ((0.5, int(p50)), (0.99, int(p99))):
            rank = min(n - 1, int(q * n))   # the vprobe's rank (vprobe_command.cc)
            # The vprobe prints whole microseconds, rounded: half a microsecond either way.
            self.assertLessEqual(lows[rank] / 1000 - 0.5, shown, f"q {q}: {line}")
            self.assertLessEqual(shown, highs[rank] / 1000 + 0.5, f"q {q}: {line}")
        print(f"\n{type(self).__name__}: spread of the stops, us: at most p50 {stops['at_most_us']['p50']:.0f} "
              f"p99 {stops['at_most_us']['p99']:.0f}, at least p50 {stops['at_least_us']['p50']:.0f}; the vprobe's "
              f"p50 {p50} p99 {p99}", file=sys.stderr)


class StacksOfBothCoresThroughOpenOCD(unittest.TestCase):
    """`record --openocd --mode halt --stacks`: every core unwound at each halt, from its own
    registers and the stack window read from its own SP in the halt's one script; each core's chains
    held to the image's call chains (stack_checks.check_dual_chains), read from the recording's
    bytes; none named as not sampled. The cost is printed: samples/s and the round trips beyond the
    halt's own per sample."""
    HALTS = 200
    openocd_commands = SECOND_CORE
    openocd_gdb = False

    @classmethod
    def link(cls) -> list[str]:
        return ["--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt"]

    @classmethod
    def setUpClass(cls):
        cls.elf = fwtest.elf_path(IMAGE)
        require((OPENOCD,), (CLI, cls.elf))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-cores-stacks-"))
        cls.out = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-cores-stacks-rec-"))
        try:
            start_rig(cls, cls.elf, icount_shift=None, openocd_commands=cls.openocd_commands,
                      openocd_gdb=cls.openocd_gdb)
            cls.recording = subprocess.run(
                [str(CLI), "record", *cls.link(), "--stacks",
                 "--samples", str(cls.HALTS), "--elf", str(cls.elf), "-o", str(cls.out / "stacks.rec"),
                 "--format", "json"], capture_output=True, text=True, timeout=900)
        finally:
            stop_rig(cls)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_each_core_unwound_along_its_own_chains(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        self.assertNotIn("not sampled", self.recording.stderr)
        chains = recorded_chains(self.out / "stacks.rec", elf_functions(self.elf))
        check_dual_chains(self, chains, self.HALTS)
        sampler = json.loads(self.recording.stdout)["sampler"]
        print(f"\n{type(self).__name__}: {sampler['samples_per_second']:.1f} halts/s, "
              f"{sampler['stacks']['extra_round_trips_per_sample']:.2f} round trips beyond the halt's per sample, "
              f"mean depth {sampler['stacks']['mean_depth']:.2f}; {json.loads(self.recording.stdout)['core_stops']}",
              file=sys.stderr)


    def test_collapsed_stacks_keep_each_core_under_its_own_root(self):
        """`report --format collapsed` of the recording: every line under one core's root, named as
        the JSON's per-core table names it, each root's lines adding up to that core's halts in the
        recording's bytes, and no frame of the other core's code under it."""
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        names = {c["core"]: c["name"] for c in json.loads(self.recording.stdout)["cores"]}
        chains = recorded_chains(self.out / "stacks.rec", elf_functions(self.elf))
        halts = collections.Counter(names[core] for core, _, _ in chains)
        collapsed = subprocess.run([str(CLI), "report", str(self.out / "stacks.rec"), "--elf", str(self.elf),
                                    "--format", "collapsed"], capture_output=True, text=True, timeout=120)
        self.assertEqual(collapsed.returncode, 0, collapsed.stderr)
        totals, frames = collections.Counter(), collections.defaultdict(set)
        for line in collapsed.stdout.splitlines():
            stack, count = line.rsplit(" ", 1)
            root, *below = stack.split(";")
            totals[root] += int(count)
            frames[root].update(below)
        self.assertEqual(totals, halts)
        for core, name in names.items():
            other = DUAL_CHAINS[1 - core]
            self.assertEqual(frames[name] & ({other["entry"], other["round"]} | other["callees"]), set(), name)
            self.assertIn(DUAL_CHAINS[core]["entry"], frames[name])

class RecordBothCoresByPcsr(RecordBothCoresThroughOpenOCD):
    """`record --openocd --mode pcsr`: each round of a batch reads every core's DWT_PCSR (core 0's
    first), the cores running. One round a batch (--batch 1), the batches 5 ms apart on average:
    each core's reads are then independent draws, and the binomial bound holds for each core.
    The reads halt QEMU (the vprobe without its PC file), as when this bound was measured: each
    core's window is then its instruction counts at uniform cost. Reads from the PC file sample
    the PC-read census instead (FILE.pcsr, QEMU's stalls included: docs/vprobe.md), which these
    counts are not (shared_step 65.9 % read against 59.49 % counted, z 4.13, in the first run
    with it); holding each core to its own FILE.pcsr window is left to do."""
    pc_file = False

    @classmethod
    def link(cls) -> list[str]:
        return ["--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "pcsr", "--batch", "1"]

    def test_skew_carried_and_within_its_bounds(self):
        """DWT_PCSR reads stop no core: the recording says the skew was not measured, and why."""
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        self.assertEqual(recorded_spreads(self.out / "dual.rec"), [(0, 0)] * self.recorded_halts)
        stops = json.loads(self.recording.stdout)["core_stops"]
        self.assertEqual((stops["halts"], stops["simultaneous"]), (0, False))
        self.assertIn("DWT_PCSR reads stop no core", stops["how"])


if __name__ == "__main__":
    unittest.main()
