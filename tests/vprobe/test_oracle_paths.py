"""Every wall-clock halting path through the vprobe against the direct gdbstub, with the exact
count of each recording's own window beside it.

QEMU runs the truth plugin in its uniform-cost mode (firmware-ref/truth/truth.c: every
instruction takes the same 2000 ns of host time, one instruction per translation block), so a
halt at a wall-clock instant lands on an instruction in about proportion to how often it
executes. The plugin's census snapshots, taken just before and just after each recording, give
the exact count of the recording's own window.

The paths: QEMU's gdbstub directly (`record --gdb`); OpenOCD's GDB port in front of the
vprobe (JTAG); OpenOCD's Tcl port in halt mode over JTAG and over the ST-Link on both of its
transports (dapdirect_swd, hla_swd). The image is FreeRTOS-shaped (fpu_frshape_fast_forever_o2_m4:
two FPU tasks, PendSV switching with FreeRTOS's register protocol at every SysTick), the shape
on which the vprobe's old halt path moved the idle task by ten standard errors.

Asserted: every path through the vprobe agrees with the direct gdbstub's profile of the same
image within 4 combined standard errors (two independent samples): the probe model is
transparent. Both sides run on the same QEMU at the same cost, so what QEMU itself adds to
both cancels. Printed, not asserted: each path against the exact count of its own window.
That comparison is what the oracle is for, but the oracle is not yet exact on a loaded
machine: QEMU's own work at each timer event (leaving the translated code at the icount
deadline, taking the BQL for the timers, entering the exception) is wall time spent with the
PC at the interrupted code, and it grows with the load. On this image (a timer event every
6 000 instructions) a clean-clone run at load 4 to 6 put tick_smooth, the SysTick handler's
callee, at 24-25 % on every path against 30.3 % of the window, the direct path included, while
the paths agreed with each other. docs/firmware-ref.md says what the oracle needs next.

Samples are 30 ms apart on average (exponential waits), up to 15 000 instructions of the
uniform-cost guest, fewer on a loaded machine: a couple of ticks of this workload, whose
slowest structure (the two tasks alternating) is one tick, so that the samples are close to
independent draws, as the binomial standard error assumes. Recordings end by sample count; the image
never ends. Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from openocd_rig import CLI, OPENOCD, require, start_rig, stop_rig

IMAGE = "fpu_frshape_fast_forever_o2_m4"
COST_NS = 2000
SAMPLES = 600
INTERVAL = ("--interval", "30ms")
Z = 4.0
MIN_SHARE = 0.005


def window_by_function(before: dict[int, int], after: dict[int, int]) -> dict[str, int]:
    return dict(fwtest.by_function(qemu_runner.census_window(before, after), fwtest.symbols(IMAGE)))


def recorded(test: unittest.TestCase, run: subprocess.CompletedProcess) -> dict[str, int]:
    """The samples by function of a JSON profile of SAMPLES samples, none outside a function."""
    test.assertEqual(run.returncode, 0, run.stderr)
    doc = json.loads(run.stdout)
    test.assertEqual(doc["samples"], SAMPLES)
    rows = {row["name"]: row["samples"] for row in doc["functions"] if row["samples"]}
    test.assertEqual(sum(rows.values()), SAMPLES, rows)
    return rows


def beyond_4_se(observed: dict[str, int], truth: dict[str, int]) -> list[tuple]:
    """Functions of the truth (>= MIN_SHARE) whose observed share is beyond Z standard errors of
    a sample of SAMPLES from it: (name, observed %, truth %, z)."""
    total = sum(truth.values())
    bad = []
    for name, count in truth.items():
        p = count / total
        if p < MIN_SHARE:
            continue
        q = observed.get(name, 0) / SAMPLES
        z = (q - p) / math.sqrt(p * (1 - p) / SAMPLES)
        if abs(z) > Z:
            bad.append((name, round(100 * q, 2), round(100 * p, 2), round(z, 2)))
    return bad


def apart_by_4_se(a: dict[str, int], b: dict[str, int]) -> list[tuple]:
    """Functions whose shares in two independent profiles of SAMPLES samples each differ by
    more than Z combined standard errors (pooled share): (name, a %, b %, z)."""
    bad = []
    for name in set(a) | set(b):
        pa, pb = a.get(name, 0) / SAMPLES, b.get(name, 0) / SAMPLES
        pooled = (pa + pb) / 2
        if pooled < MIN_SHARE:
            continue
        z = (pa - pb) / math.sqrt(2 * pooled * (1 - pooled) / SAMPLES)
        if abs(z) > Z:
            bad.append((name, round(100 * pa, 2), round(100 * pb, 2), round(z, 2)))
    return bad


def record_command(link: list[str], rec: Path) -> list[str]:
    return [str(CLI), "record", *link, "--samples", str(SAMPLES), *INTERVAL, "--seed", "7",
            "--elf", str(fwtest.elf_path(IMAGE)), "-o", str(rec), "--format", "json"]


def report(label: str, observed: dict[str, int], truth: dict[str, int]) -> None:
    """Prints the path's hottest functions against its window, and the rows beyond 4 SE."""
    total = sum(truth.values())
    rows = sorted(truth, key=lambda k: -truth[k])[:8]
    print(f"\n{label}: " + ", ".join(f"{k} {100 * observed.get(k, 0) / SAMPLES:.2f}/{100 * truth[k] / total:.2f}"
                                    for k in rows) + f" (% sampled/exact); beyond 4 SE: {beyond_4_se(observed, truth)}",
          file=sys.stderr)


@functools.cache
def direct_gdbstub() -> tuple[subprocess.CompletedProcess, dict[str, int]]:
    """`record --gdb` on QEMU's own gdbstub, and the census of its window."""
    require(("arm-none-eabi-nm",), (CLI, fwtest.elf_path(IMAGE)))
    work = Path(tempfile.mkdtemp(prefix="mcuprof-oracle-direct-"))
    with qemu_runner.QemuRun(fwtest.elf_path(IMAGE), gdb=True, truth=work / "truth.txt", uart=None,
                             uniform_cost_ns=COST_NS, workdir=work, timeout=900) as q:
        q.wait_listening(q.gdb_port)
        before = q.snapshot()
        run = subprocess.run(record_command(["--gdb", f"127.0.0.1:{q.gdb_port}"], work / "direct.rec"),
                             capture_output=True, text=True, timeout=900)
        after = q.snapshot()
        q.stop()
    return run, window_by_function(before, after)


class DirectGdbstub(unittest.TestCase):
    def test_every_sample_in_a_function_against_its_window(self):
        run, truth = direct_gdbstub()
        observed = recorded(self, run)
        report("direct gdbstub", observed, truth)


class ThroughTheVprobe:
    """One path through `mcuprof vprobe` and OpenOCD (set by the subclass: stlink_transport for
    the ST-Link, None for JTAG; link: how mcuprof reaches OpenOCD)."""
    stlink_transport: str | None = None
    openocd_gdb = False

    @classmethod
    def link(cls) -> list[str]:
        return ["--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt"]

    @classmethod
    def setUpClass(cls):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, fwtest.elf_path(IMAGE)))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-oracle-vprobe-"))
        try:
            start_rig(cls, fwtest.elf_path(IMAGE), truth=cls.work / "truth.txt", uniform_cost_ns=COST_NS,
                      openocd_gdb=cls.openocd_gdb)
            before = cls.qemu.snapshot()
            cls.recording = subprocess.run(record_command(cls.link(), cls.work / "path.rec"),
                                     capture_output=True, text=True, timeout=1500)
            if cls.openocd_gdb:
                cls.tcl.run("poll")   # OpenOCD's view after the GDB client detached
            cls.state_after = cls.tcl.run("[target current] curstate").strip()
            after = cls.qemu.snapshot()
            cls.truth = window_by_function(before, after)
        finally:
            stop_rig(cls)

    def test_every_sample_in_a_function_against_its_window(self):
        observed = recorded(self, self.recording)
        report(self.__class__.__name__, observed, self.truth)
        self.assertEqual(self.state_after, "running")

    def test_transparent_agrees_with_the_direct_gdbstub(self):
        direct, _ = direct_gdbstub()
        self.assertEqual(apart_by_4_se(recorded(self, self.recording), recorded(self, direct)), [])


class OpenOCDGdbPort(ThroughTheVprobe, unittest.TestCase):
    openocd_gdb = True

    @classmethod
    def link(cls) -> list[str]:
        return ["--gdb", f"127.0.0.1:{cls.gdb_port}"]


class TclHaltJtag(ThroughTheVprobe, unittest.TestCase):
    pass


class TclHaltStlinkDapDirect(ThroughTheVprobe, unittest.TestCase):
    stlink_transport = "dapdirect_swd"


class TclHaltStlinkHla(ThroughTheVprobe, unittest.TestCase):
    stlink_transport = "hla_swd"


if __name__ == "__main__":
    unittest.main()
