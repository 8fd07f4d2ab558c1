"""MSP, PSP and CONTROL through the virtual probe in front of QEMU 7.2, whose gdbstub describes
none of them: the probe reads them by a stub of MRS instructions below SP
(src/link/rsp/special_register_stub.cc) when OpenOCD reads DCRSR REGSEL 17, 18 and 20.
Real QEMU, the real `mcuprof vprobe`, the real OpenOCD (JTAG front end), on fpu_forever_o2_m4
(firmware-ref/src/scen_fpu.c: two FPU tasks on PSP under minirtos, SysTick and PendSV).

  StackPointersAtHalts  at HALTS halts at random moments, through OpenOCD's Tcl port:
      - OpenOCD's sp, msp, psp and control agree with the architecture and the firmware's own
        record: in Handler mode the core runs on MSP (SP = MSP); in a task on PSP (SP = PSP,
        CONTROL.SPSEL = 1) with MSP where rtos_start left it (rtos_thread_msp, which it writes
        just before its svc);
      - a second stub run at the same halt, forced through the raw DCRSR/DCRDR (a write of r0
        with its own value drops the probe's register cache), gives the same values, and QEMU's
        own monitor (`info registers`: r0-r15, xPSR, d0-d15, FPSCR; `xp` of the 512 bytes
        around SP) shows the same state before and after it;
      - the firmware's own check (every FIR and IIR block against the first: a corrupted
        register, FP or not, counts in `mismatches`) stays 0.
    It prints the cost: a halt's round trip through OpenOCD (its debug entry reads every
    register, so it includes one stub run), and one stub run alone (the forced read of MSP
    against the same sequence for SP, which needs none).
  StackPointersAtHaltsOverStlink  the same through the ST-Link front end (OpenOCD's hla_swd).
  HandlerChainsThroughGdbPort  `mcuprof record --gdb` through OpenOCD's GDB port with --stacks
      (msp and psp from OpenOCD's target description): the completeness goal of
      tests/live/test_stacks.py's FpuTasks (>= 99 % of Thread-mode stacks complete to their
      task's entry, >= 90 % of Handler-mode stacks complete into the interrupted task) and no
      Handler-mode chain complete through `rtos_start`, which never runs again once the first
      task started: a handler that read its task's frame off the main stack ends there.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from stack_checks import FPU_HANDLERS, all_symbols, assert_stack_goal
from openocd_rig import CLI, FW_DIR, OPENOCD, RigClass, require, start_rig, stop_rig

ELF = FW_DIR / "fpu_forever_o2_m4.elf"
HALTS = 300
# Wall-clock halts land in PendSV's switch window, where minirtos holds EXC_RETURN in r12 and
# the chain is marked truncated (docs/stacks.md, Limits), more often than exact pacing does:
# 33 of 701 Handler-mode samples (4.7 %) over four runs, against 2 of 413 under live.stacks'
# FpuTasks. With about a tenth of the samples in Handler mode, 3000 samples put the goal's
# 90 % more than 4 standard errors below the expected 95 %.
SAMPLES = 3000
DCRSR, DCRDR = 0xE000EDF4, 0xE000EDF8
REGWNR = 1 << 16
REGSEL_R0, REGSEL_SP, REGSEL_MSP, REGSEL_PSP, REGSEL_SPECIAL = 0, 13, 17, 18, 20


def start_rig_with_monitor(rig, **options) -> None:
    """The rig, whose QEMU has a QMP socket (start_rig opens one): QEMU's own monitor is the
    independent view of the state."""
    start_rig(rig, ELF, **options)


class StackPointersAtHalts(RigClass, unittest.TestCase):
    work_prefix = "mcuprof-stack-pointers-"

    @classmethod
    def requirements(cls):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, ELF))

    @classmethod
    def with_rig(cls):
        cls.symbols = all_symbols(ELF)
        start_rig_with_monitor(cls)

    def reg(self, name: str) -> int:
        out = self.tcl.run(f"reg {name}")
        match = re.search(r":\s*(0x[0-9a-fA-F]+)", out)
        self.assertIsNotNone(match, out)
        return int(match.group(1), 16)

    def word(self, address: int) -> int:
        return int(self.tcl.run(f"read_memory {address:#x} 32 1").split()[0], 0)

    def core_register(self, regsel: int) -> int:
        """A read through the raw debug registers, as a debugger does it (DCRSR, then DCRDR)."""
        self.tcl.run(f"mww {DCRSR:#x} {regsel}")
        return self.word(DCRDR)

    def monitor_view(self, sp: int) -> tuple[str, str]:
        """QEMU's own view: every register it prints, and the 512 bytes around SP."""
        hmp = lambda line: self.qemu.qmp("human-monitor-command", **{"command-line": line})  # noqa: E731
        return hmp("info registers"), hmp(f"xp /128wx {sp - 256:#x}")

    def test_msp_psp_control_at_halts_and_the_target_left_as_it_was(self):
        witness = self.symbols["rtos_thread_msp"][0]
        mismatches = self.symbols["mismatches"][0]
        stacks = [(self.symbols[s][0], self.symbols[s][0] + self.symbols[s][1]) for s in ("fir_stack", "iir_stack")]
        draw = random.Random(23)
        in_task = in_handler = 0
        halt_s, stub_s, plain_s = [], [], []
        for i in range(HALTS):
            time.sleep(draw.uniform(0.002, 0.02))
            t0 = time.perf_counter()
            self.tcl.run("halt")
            halt_s.append(time.perf_counter() - t0)
            sp, msp, psp = self.reg("sp"), self.reg("msp"), self.reg("psp")
            xpsr, control = self.reg("xPSR"), self.reg("control")
            where = dict(halt=i, sp=hex(sp), msp=hex(msp), psp=hex(psp), xpsr=hex(xpsr), control=control)
            if xpsr & 0x1FF:
                in_handler += 1
                self.assertEqual(msp, sp, where)
            elif any(lo <= sp < hi for lo, hi in stacks):
                in_task += 1
                self.assertEqual(control & 2, 2, where)   # SPSEL: the task runs on PSP
                self.assertEqual(psp, sp, where)
                self.assertEqual(msp, self.word(witness), where)
            else:   # before the scheduler: main on MSP
                self.assertEqual(control & 2, 0, where)
                self.assertEqual(msp, sp, where)

            before = self.monitor_view(sp)
            r0 = self.reg("r0")
            # The plain sequence first (its registers are cached), then the same with a stub run.
            t0 = time.perf_counter()
            self.tcl.run(f"mww {DCRDR:#x} {r0:#x}; mww {DCRSR:#x} {REGWNR | REGSEL_R0}")
            self.assertEqual(self.core_register(REGSEL_SP), sp, where)
            plain_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            self.tcl.run(f"mww {DCRDR:#x} {r0:#x}; mww {DCRSR:#x} {REGWNR | REGSEL_R0}")
            self.assertEqual(self.core_register(REGSEL_MSP), msp, where)
            stub_s.append(time.perf_counter() - t0)
            self.assertEqual(self.core_register(REGSEL_PSP), psp, where)
            self.assertEqual(self.core_register(REGSEL_SPECIAL) >> 24, control, where)
            after = self.monitor_view(sp)
            self.assertEqual(before[0], after[0], where)
            self.assertEqual(before[1], after[1], where)
            self.tcl.run("resume")
        self.assertEqual(self.word(mismatches), 0)
        self.assertGreater(in_task, HALTS // 3)
        self.assertGreater(in_handler, 0)
        ms = lambda xs: 1000 * statistics.median(xs)  # noqa: E731
        print(f"\nstack pointers through OpenOCD: {in_task} halts in tasks, {in_handler} in handlers; median "
              f"`halt` {ms(halt_s):.2f} ms (its debug entry runs the stub once); one stub run "
              f"{ms(stub_s) - ms(plain_s):.2f} ms ({ms(stub_s):.2f} for the forced MSP read against "
              f"{ms(plain_s):.2f} for SP)", file=sys.stderr)


class StackPointersAtHaltsOverStlink(StackPointersAtHalts):
    """The same through the ST-Link front end with OpenOCD's hla target, which reads registers
    with the ST-Link's own commands (READREG by REGSEL) instead of the MEM-AP."""
    stlink_transport = "hla_swd"


class HandlerChainsThroughGdbPort(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-handler-chains-"))
        try:
            start_rig(cls, ELF, singlestep=True, openocd_gdb=True)
            cls.record = subprocess.run(
                [str(CLI), "record", "--gdb", f"127.0.0.1:{cls.gdb_port}", "--stacks", "--interval", "20ms",
                 "--samples", str(SAMPLES), "--elf", str(ELF), "-o", str(cls.work / "chains.rec"), "--format", "json"],
                capture_output=True, text=True, timeout=1500)
            # OpenOCD halted the target when mcuprof attached and would leave it halted on 'D'.
            cls.tcl.run("poll")
            cls.state_after = cls.tcl.run("[target current] curstate").strip()
        finally:
            stop_rig(cls)

    def test_the_target_is_left_running(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        self.assertEqual(self.state_after, "running")

    def test_handler_chains_cross_into_the_interrupted_task(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        doc = json.loads(self.record.stdout)
        stacks = doc["stacks"]
        self.assertEqual(sum(s["samples"] for s in stacks), SAMPLES)
        assert_stack_goal(self, "record --gdb through OpenOCD", doc)
        through_start = [s for s in stacks if not s["truncated"] and "rtos_start" in
                         (names := [f["function"] for f in s["frames"]]) and FPU_HANDLERS & set(names)]
        self.assertEqual(through_start, [])


if __name__ == "__main__":
    unittest.main()
