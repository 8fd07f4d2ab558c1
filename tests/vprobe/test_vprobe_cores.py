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

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import re
import tempfile
import time
import unittest
from pathlib import Path

import fwtest
from openocd_rig import CLI, OPENOCD, elf_functions, elf_symbol, require, start_rig, stop_rig

IMAGE = "dual_forever_an521"
# Core 1 on access port 1; the last target created is OpenOCD's current one: `targets` makes core 0
# current again.
SECOND_CORE = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1 -gdb-port disabled",
               "targets qemu.cpu")
TARGETS = ("qemu.cpu", "qemu.cpu1")
CORE_CODE = ({"main", "core0_round", "c0_heavy", "c0_light", "shared_step"},
             {"core1_main", "core1_reset", "core1_round", "c1_alpha", "c1_beta", "shared_step"})
HALTS = 6


def function_at(functions: dict[str, tuple[int, int]], pc: int) -> str | None:
    return next((name for name, (start, end) in functions.items() if start <= pc < end), None)


class TwoCoresThroughOpenOCD(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        elf = fwtest.elf_path(IMAGE)
        require((OPENOCD,), (CLI, elf))
        cls.functions = elf_functions(elf)
        cls.core1_rounds = elf_symbol(elf, "core1_rounds")
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-cores-"))
        try:
            start_rig(cls, elf, openocd_commands=SECOND_CORE)
        except BaseException:
            stop_rig(cls)
            raise

    @classmethod
    def tearDownClass(cls):
        stop_rig(cls)

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

    def wait_core1_started(self) -> None:
        """Until core 1 (released by core 0 at start-up) has finished a round: a bound for a
        loaded machine, the event takes microseconds."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            words = self.on("qemu.cpu", f"read_memory {self.core1_rounds:#x} 32 1").split()
            if int(words[-1], 0) > 0:
                return
            time.sleep(0.05)
        self.fail("core 1 did not finish a round within 120 s")

    def test_1_both_cores_examined(self):
        self.assertIn("core 0 on AP0, core 1 on AP1", self.vprobe_log[0])
        log = (self.work / "openocd.log").read_text()
        for target in TARGETS:
            self.assertIn(f"[{target}] Cortex-M33", log)
            self.assertEqual(self.tcl.run(f"{target} curstate").strip(), "running")

    def test_2_each_core_pc_is_its_own(self):
        self.wait_core1_started()
        for _ in range(HALTS):
            self.on("qemu.cpu", "halt")
            # All-stop: the whole machine stopped, core 1 still running for OpenOCD (stalled).
            self.assertFalse(self.machine_running())
            self.assertEqual(self.tcl.run("qemu.cpu1 curstate").strip(), "running")
            self.on("qemu.cpu1", "halt")
            pcs = [self.pc(target) for target in TARGETS]
            self.assertEqual(pcs, self.qemu_pcs())
            for core, pc in enumerate(pcs):
                self.assertIn(function_at(self.functions, pc), CORE_CODE[core], f"core {core} pc {pc:#x}")
            # A core's step moves that core alone. OpenOCD's default `maskisr auto` steps by
            # resuming to a breakpoint at the PC, which a core cannot reach while the other's halt
            # stops the machine: `steponly` steps with C_STEP (docs/vprobe.md, "Two cores").
            self.on("qemu.cpu1", "cortex_m maskisr steponly; step")
            self.assertEqual(self.pc("qemu.cpu"), pcs[0])
            self.assertEqual(self.qemu_pcs()[0], pcs[0])
            self.assertEqual(self.pc("qemu.cpu1"), self.qemu_pcs()[1])
            # The machine runs once every halted core is resumed.
            self.on("qemu.cpu1", "resume")
            self.assertFalse(self.machine_running())
            self.on("qemu.cpu", "resume")
            self.wait_machine_running()
            for target in TARGETS:
                self.assertEqual(self.tcl.run(f"{target} curstate").strip(), "running")
            time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
