"""Both cores of a two-core chip through OpenOCD's GDB port (issue 29): the rig of
test_vprobe_cores (mps2-an521's two Cortex-M33 running dual_forever_an521 at a uniform cost per
instruction without -icount, the vprobe with core 1 on AP1, the real OpenOCD with two cortex_m
targets), sampled by `record --gdb` on OpenOCD's GDB port instead of its Tcl port.

OpenOCD 0.12's GDB port halts its own target only: its cortex_m has no SMP halt, and the
hwthread port of a `target smp` group shows each core as a thread but answers a running core's
'g' with the port target's registers. So mcuprof halts the other examined cortex_m targets
itself, by one monitor script right after OpenOCD's halt (docs/live.md, "Several cores").

- Each target with its GDB port (the port of core 0 sampled), as configs/openocd/stm32h745-stlink.cfg
  has it: each core's samples in that core's own code; both cores named, none reported as not
  sampled; on QEMU 8 and later (whose gdbstub describes msp/psp, so the vprobe's MRS stub does not
  run at OpenOCD's halts) each core's shares within 4 standard errors of its own window's census,
  N that core's samples; each halt's spread of the cores' stops in the recording, its bounds
  from OpenOCD's clock inside the monitor script and mcuprof's around it, holding the vprobe's
  own measure of the same halts at the median and p99 (the Tcl port's test, inherited).
- The same as a `target smp` group with `-rtos hwthread` (one port for the group), with fewer halts:
  the bound holds at any N.
- Each core's own task (the two-core task images, FreeRTOS SMP and Zephyr SMP shapes) through
  OpenOCD's Tcl port (halt mode) and its GDB port.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import unittest

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import fwtest
from top_output import core_sections
import qemu_runner
from openocd_rig import CLI, OPENOCD, RigClass, require, start_rig, stop_rig
from task_checks import check_tasks_per_core
from test_vprobe_cores import CORE_CODE, RecordBothCoresThroughOpenOCD


class RecordBothCoresThroughGdbPort(RecordBothCoresThroughOpenOCD):
    """Core 1's target with a GDB port of its own (OpenOCD's next, unused here)."""
    openocd_commands = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1", "targets qemu.cpu")
    openocd_gdb = True

    @classmethod
    def link(cls) -> list[str]:
        return ["--gdb", f"127.0.0.1:{cls.gdb_port}"]

    def test_each_core_within_4_se_of_its_window(self):
        # OpenOCD's own halt of core 0 reads MSP, PSP and CONTROL: on a QEMU whose gdbstub does
        # not describe them (before 8.0) the vprobe runs its MRS stub at every halt, which bends
        # the profile (measured on QEMU 7.2: core1_round 1.4 and 1.6 % against 0.38 % of its
        # window in two of three runs; docs/live.md, "Several cores"), as vprobe.oracle_paths has it.
        if qemu_runner.qemu_version(qemu_runner.QEMU) < (8, 0):
            self.skipTest("this QEMU describes no msp/psp: the vprobe's MRS stub runs at every halt of OpenOCD's "
                          "GDB port and bends the profile; held to the census on QEMU 8 and later")
        super().test_each_core_within_4_se_of_its_window()

    def test_each_core_in_its_own_code(self):
        # On every QEMU: a sample given to the wrong core shows at once (scen_dual.c: only
        # shared_step runs on both cores).
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        for entry in json.loads(self.recording.stdout)["cores"]:
            names = {row["name"] for row in entry["functions"]}
            self.assertLessEqual(names, CORE_CODE[entry["core"]], f"core {entry['core']}")


class RecordBothCoresThroughSmpGdbPort(RecordBothCoresThroughGdbPort):
    """A `target smp` group with hwthread: one GDB port, each core a thread of it."""
    openocd_commands = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1 -coreid 1",
                        "target smp qemu.cpu qemu.cpu1",
                        "qemu.cpu configure -rtos hwthread", "qemu.cpu1 configure -rtos hwthread",
                        "targets qemu.cpu")
    recorded_halts = 400


class TasksPerCoreThroughOpenOCD(unittest.TestCase):
    """Each core's own current task through OpenOCD, on the kernels shaped like FreeRTOS SMP
    (pxCurrentTCBs[i]) and Zephyr SMP (_kernel.cpus[i].current): `record --openocd --mode halt`
    and `record --gdb` on OpenOCD's GDB port, each held to what scen_dualtasks.c guarantees (a
    sample in a task's function carries that task, each core only its own tasks), as
    tests/live/test_multicore.py holds QEMU's gdbstub path."""
    HALTS = 200

    def check_kernel(self, image: str):
        elf = fwtest.elf_path(image)
        require((OPENOCD,), (CLI, elf))
        rig = type("Rig", (), {})()
        rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-dual-tasks-"))
        out = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-dual-tasks-rec-"))
        try:
            try:
                start_rig(rig, elf, icount_shift=None, openocd_gdb=True,
                          openocd_commands=RecordBothCoresThroughGdbPort.openocd_commands)
                runs = {}
                for name, link in (("tcl", ["--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", "halt"]),
                                   ("gdb", ["--gdb", f"127.0.0.1:{rig.gdb_port}"])):
                    runs[name] = subprocess.run([str(CLI), "record", *link, "--samples", str(self.HALTS),
                                                 "--elf", str(elf), "-o", str(out / f"{name}.rec")],
                                                capture_output=True, text=True, timeout=600)
            finally:
                stop_rig(rig)
            for name, run in runs.items():
                with self.subTest(link=name):
                    self.assertEqual(run.returncode, 0, run.stderr)
                    self.assertNotIn("not sampled", run.stderr)
                    check_tasks_per_core(self, out / f"{name}.rec", image, CLI, 2 * self.HALTS)
        finally:
            shutil.rmtree(out, ignore_errors=True)

    def test_freertos_smp_shape(self):
        self.check_kernel("dualtasks_freertos_an521")

    def test_zephyr_smp_shape(self):
        self.check_kernel("dualtasks_zephyr_an521")


class GdbPortLeavesCoresAsFound(RigClass, unittest.TestCase):
    """One rig (dual_forever_an521, OpenOCD's GDB port for core 0, core 1's target beside it):
    - `record --gdb` leaves core 1's debug registers as it found them: DFSR (whose HALTED bit the
      monitor script's halt requests set), DHCSR and DEMCR read through OpenOCD's Tcl port after the
      recording equal what they were before it, as the Tcl path promises;
    - `top --gdb` shows each core: a table per core, each core's rows in its own code (scen_dual.c:
      only shared_step runs on both), summing to the halts."""
    HALTS = 200
    REGISTERS = {"DFSR": 0xE000ED30, "DHCSR": 0xE000EDF0, "DEMCR": 0xE000EDFC}   # ARMv7-M ARM C1.6

    elf = fwtest.elf_path("dual_forever_an521")
    work_prefix = "mcuprof-vprobe-gdb-as-found-"

    @classmethod
    def requirements(cls):
        require((OPENOCD,), (CLI, cls.elf))

    @classmethod
    def with_rig(cls):
        start_rig(cls, cls.elf, icount_shift=None, openocd_gdb=True,
                  openocd_commands=RecordBothCoresThroughGdbPort.openocd_commands)

    def core1_registers(self) -> dict[str, int]:
        return {name: int(self.tcl.run(f"qemu.cpu1 read_memory {address:#x} 32 1").split()[-1], 0)
                for name, address in self.REGISTERS.items()}

    def test_record_leaves_core1_debug_registers_as_found(self):
        before = self.core1_registers()
        out = self.work / "as-found.rec"
        run = subprocess.run([str(CLI), "record", "--gdb", f"127.0.0.1:{self.gdb_port}", "--samples",
                              str(self.HALTS), "--elf", str(self.elf), "-o", str(out)],
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertNotIn("not sampled", run.stderr)
        self.assertEqual(self.core1_registers(), before)

    def test_top_shows_each_core_in_its_own_code(self):
        run = subprocess.run([str(CLI), "top", "--gdb", f"127.0.0.1:{self.gdb_port}", "--elf", str(self.elf),
                              "--samples", str(self.HALTS), "--rows", "0"], capture_output=True, text=True, timeout=600)
        self.assertEqual(run.returncode, 0, run.stderr)
        sections = core_sections(run.stdout)
        self.assertEqual(sorted(sections), [0, 1])
        for core, rows in sections.items():
            self.assertEqual(sum(rows.values()), self.HALTS, rows)
            self.assertLessEqual(set(rows), CORE_CODE[core], f"core {core}")


del RecordBothCoresThroughOpenOCD   # run by test_vprobe_cores


if __name__ == "__main__":
    unittest.main()
