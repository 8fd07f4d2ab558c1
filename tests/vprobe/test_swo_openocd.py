"""`mcuprof swo` against the real OpenOCD 0.12 through the virtual probe (QEMU runs
mixed_forever_m4): the DEMCR, ITM and DWT writes land, read back through OpenOCD with values
worked out by hand from the ARMv7-M ARM; then OpenOCD's `tpiu enable` fails, since QEMU has
no TPIU (its registers read 0, so OpenOCD finds no UART protocol), and mcuprof says so in one
line with exit code 2 and leaves the target running.

The live capture itself (OpenOCD serving the SWO stream on a TCP port) needs a probe that
captures SWO; tests/cli/test_swo_live.py checks that part against a stand-in OpenOCD.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import re
import subprocess
import unittest

import qemu_runner
from openocd_rig import CLI, ELF, OPENOCD, RigClass, require, start_rig

DEMCR, ITM_TCR, DWT_CTRL = 0xE000EDFC, 0xE0000E80, 0xE0001000


class SwoSetupThroughOpenOCD(RigClass, unittest.TestCase):
    """The same rig as vprobe_suite's checks: QEMU, the vprobe, OpenOCD with its Tcl port
    (attributes tcl, tcl_port), and its GDB port."""
    work_prefix = "mcuprof-vprobe-swo-"

    @classmethod
    def requirements(cls):
        require((OPENOCD,), (CLI, ELF))

    @classmethod
    def with_rig(cls):
        start_rig(cls, ELF, openocd_gdb=True)

    def read(self, address: int) -> int:
        return int(self.tcl.run(f"mdw {address:#x}").split(":")[1], 16)

    def swo(self, *args: str) -> subprocess.CompletedProcess:
        # Start from cleared registers, so that every bit read back was written by mcuprof.
        self.tcl.run(f"mww {DEMCR:#x} 0")
        self.tcl.run(f"mww {DWT_CTRL:#x} 0")
        self.tcl.run(f"mww {ITM_TCR:#x} 0")
        return subprocess.run([str(CLI), "swo", "--openocd", f"127.0.0.1:{self.tcl_port}", "--elf", str(ELF),
                               "--trace-output", f":{qemu_runner.free_port()}", *args],
                              capture_output=True, text=True, timeout=60)

    def assert_fails_in_one_line_at_the_tpiu(self, r: subprocess.CompletedProcess) -> dict[str, int]:
        """The one line, the target running and its registers as they were (cleared by swo()).
        Returns the values mcuprof read back after its writes, as that line gives them."""
        self.assertEqual(r.returncode, 2, r.stderr)
        last = r.stderr.strip().splitlines()[-1]
        self.assertRegex(last, r"^mcuprof swo: openocd tcl 127\.0\.0\.1:\d+, \S+ enable: OpenOCD cannot start "
                               r"the SWO capture: .*does not support protocol uart .*see docs/swo.md\)$")
        self.assertEqual(r.stdout, "")
        self.assertEqual(self.tcl.run("[target current] curstate").strip(), "running")
        self.assertEqual(self.read(DEMCR), 0)
        self.assertEqual(self.read(ITM_TCR), 0)
        self.assertEqual(self.read(DWT_CTRL), 4 << 28)   # NUMCOMP 4 is read-only; the rest as it was
        read_back = re.search(r"read back as DEMCR (0x[0-9a-f]+) ITM_TCR (0x[0-9a-f]+) DWT_CTRL (0x[0-9a-f]+)", last)
        self.assertIsNotNone(read_back, last)
        return dict(zip(("DEMCR", "ITM_TCR", "DWT_CTRL"), (int(v, 16) for v in read_back.groups())))

    def test_registers_for_20000_per_second_at_168_mhz(self):
        r = self.swo("--cpu-hz", "168M", "--rate", "20000")
        written = self.assert_fails_in_one_line_at_the_tpiu(r)
        # 168e6 / 20000 = 8400 cycles at least: 9216 = 1024 x 9, CYCTAP 1, POSTPRESET 8.
        self.assertIn("CYCTAP 1 POSTPRESET 8: a PC sample every 9216 cycles", r.stderr)
        self.assertEqual(written["DEMCR"], 1 << 24)                                 # TRCENA
        self.assertEqual(written["ITM_TCR"], (1 << 16) | (1 << 3) | (1 << 2) | 1)  # TraceBusID 1, DWTENA, SYNCENA, ITMENA
        # NUMCOMP 4 (read-only, bits 31:28) | PCSAMPLENA | SYNCTAP 1 | CYCTAP | POSTINIT 8 | POSTPRESET 8 | CYCCNTENA
        self.assertEqual(written["DWT_CTRL"], (4 << 28) | (1 << 12) | (1 << 10) | (1 << 9) | (8 << 5) | (8 << 1) | 1)

    def test_default_rate_is_what_a_2_mhz_line_carries(self):
        r = self.swo("--cpu-hz", "168M")
        written = self.assert_fails_in_one_line_at_the_tpiu(r)
        # 2e6 / 10 / 5 = 40000 samples/s: at least 4200 cycles, 5120 = 1024 x 5, POSTPRESET 4.
        self.assertIn("every 5120 cycles", r.stderr)
        self.assertEqual(written["DWT_CTRL"], (4 << 28) | (1 << 12) | (1 << 10) | (1 << 9) | (4 << 5) | (4 << 1) | 1)

    def test_fast_rate_uses_cyctap_0_and_warns_of_the_line(self):
        r = self.swo("--cpu-hz", "168M", "--rate", "1M")
        written = self.assert_fails_in_one_line_at_the_tpiu(r)
        # 168 cycles at least: 192 = 64 x 3, CYCTAP 0, POSTPRESET 2; 875000/s is over 40000/s.
        self.assertIn("warning: the rate is above what the line carries", r.stderr)
        self.assertEqual(written["DWT_CTRL"], (4 << 28) | (1 << 12) | (1 << 10) | (2 << 5) | (2 << 1) | 1)

    def test_wrong_arguments_exit_1(self):
        r = subprocess.run([str(CLI), "swo", "--openocd", f"127.0.0.1:{self.tcl_port}", "--elf", str(ELF)],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--cpu-hz F is required", r.stderr)


if __name__ == "__main__":
    unittest.main()
