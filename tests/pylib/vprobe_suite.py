"""The checks of OpenOCD debugging the reference firmware through the virtual probe, as a test
class that each probe's test module runs on its own rig (test_vprobe_openocd: JTAG through
remote_bitbang; test_stlink_openocd: an ST-Link over SWD, both transports)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

from openocd_rig import (CLI, ELF, OPENOCD, UNIT_TESTS, RigClass, elf_flash_image, elf_functions, elf_symbol,
                         guest_running, read_gmon, require, start_rig)


class VprobeWithOpenOCD(RigClass, unittest.TestCase):
    """One QEMU, one vprobe, one OpenOCD for the whole class; the tests run in name order."""
    work_prefix = "mcuprof-vprobe-"

    @classmethod
    def requirements(cls):
        require((OPENOCD, "arm-none-eabi-nm", "arm-none-eabi-objcopy"), (CLI, ELF))

    @classmethod
    def with_rig(cls):
        start_rig(cls, ELF, openocd_gdb=True)
        cls.functions = elf_functions(ELF)
        cls.text = (elf_symbol(ELF, "__text_start"), elf_symbol(ELF, "__text_end"))

    # ---- helpers

    def function_at(self, pc: int) -> str | None:
        for name, (start, end) in self.functions.items():
            if start <= pc < end:
                return name
        return None

    def reg(self, name: str) -> int:
        out = self.tcl.run(f"reg {name}")
        match = re.search(r":\s*(0x[0-9a-fA-F]+)", out)
        self.assertIsNotNone(match, out)
        return int(match.group(1), 16)

    def state(self) -> str:
        out = self.tcl.run("targets")
        match = re.search(r"(\S+\.cpu)\s+(?:cortex_m|hla_target)\s+little\s+\1\s+(\w+)", out)
        self.assertIsNotNone(match, out)
        return match.group(2)

    def wait_state(self, wanted: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.state() != wanted:
            if time.monotonic() > deadline:
                self.fail(f"the target did not become {wanted}")
            self.tcl.run("poll")
            time.sleep(0.05)

    # ---- the tests, in order

    def test_1_examined_as_cortex_m4_running(self):
        out = self.tcl.run("targets")
        self.assertIn("cortex_m", out)
        self.assertEqual(self.state(), "running")
        log = (self.work / "openocd.log").read_text()
        self.assertIn("tap/device found: 0x4ba00477", log)
        self.assertIn("Cortex-M4 r0p0 processor detected", log)
        self.assertIn("target has 6 breakpoints, 4 watchpoints", log)

    def test_2_halt_pc_in_a_function(self):
        self.tcl.run("halt")
        self.assertEqual(self.state(), "halted")
        pc = self.reg("pc")
        self.assertIsNotNone(self.function_at(pc), f"pc 0x{pc:08x} is in no function of {ELF.name}")
        self.assertTrue(self.reg("xPSR") & (1 << 24), "the Thumb bit")
        # A step moves on by one instruction (2 or 4 bytes) unless it branched.
        self.tcl.run("step")
        self.assertIsNotNone(self.function_at(self.reg("pc")))
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_3_memory_equals_the_elf_image(self):
        image = elf_flash_image(ELF, self.work)
        vectors = [int.from_bytes(image[i:i + 4], "little") for i in range(0, 32, 4)]
        out = self.tcl.run("mdw 0x08000000 8")
        words = [int(w, 16) for w in out.split(":", 1)[1].split()]
        self.assertEqual(words, vectors)
        # The whole image, read while the target runs and again while it is halted.
        count = len(image) // 4
        expected = [int.from_bytes(image[i:i + 4], "little") for i in range(0, 4 * count, 4)]
        timings = {}
        for when in ("running", "halted"):
            if when == "halted":
                self.tcl.run("halt")
            started = time.monotonic()
            got = [int(w, 0) for w in self.tcl.run(f"read_memory 0x08000000 32 {count}").split()]
            timings[when] = time.monotonic() - started
            self.assertEqual(got, expected, when)
        self.tcl.run("resume")
        # Speed through the whole chain (OpenOCD -> JTAG bits -> vprobe -> QEMU), for the docs.
        started = time.monotonic()
        self.tcl.run("read_memory 0x20000000 32 4096")
        seconds = time.monotonic() - started
        print(f"\nvprobe: read_memory 4096 words (SRAM, target running): {4096 / seconds:.0f} words/s; "
              f"{count} words of flash: running {count / timings['running']:.0f}, halted "
              f"{count / timings['halted']:.0f} words/s", file=sys.stderr)

    def test_4_breakpoint_stops_at_its_function(self):
        start, _ = self.functions["classify"]
        self.tcl.run(f"bp 0x{start:08x} 2 hw")
        try:
            self.wait_state("halted")
            self.assertEqual(self.reg("pc"), start)
            self.assertIn("breakpoint", self.tcl.run("poll"))
        finally:
            self.tcl.run("rbp all")
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_5_reset_halt_stops_at_the_reset_vector(self):
        image = elf_flash_image(ELF, self.work)
        reset_vector = int.from_bytes(image[4:8], "little") & ~1
        self.tcl.run("reset halt")
        self.assertEqual(self.state(), "halted")
        self.assertEqual(self.reg("pc"), reset_vector)
        self.assertEqual(self.reg("sp"), int.from_bytes(image[0:4], "little"))
        # Run to main through a breakpoint, so that the firmware is past its start-up code
        # however fast the emulator runs (the profile below must see none of it).
        main, _ = self.functions["main"]
        self.tcl.run(f"bp 0x{main:08x} 2 hw")
        try:
            self.tcl.run("resume")
            self.wait_state("halted")
            self.assertEqual(self.reg("pc"), main)
        finally:
            self.tcl.run("rbp all")
        self.tcl.run("resume")

    def test_6_profile_samples_inside_the_text(self):
        gmon = self.work / "gmon.out"
        text_start, text_end = self.text
        started = time.monotonic()
        out = self.tcl.run(f"profile 1 {gmon} 0x{text_start:x} 0x{text_end:x}")
        seconds = time.monotonic() - started
        match = re.search(r"(\d+) samples", out + (self.work / "openocd.log").read_text())
        self.assertIsNotNone(match, out)
        samples = int(match.group(1))
        low, high, buckets = read_gmon(gmon)
        self.assertEqual((low, high), (text_start, text_end))
        # With the range given, samples outside it are dropped: all of them are inside. How
        # many a second of `profile` takes depends on the machine and the probe (47 through
        # hla_swd with both cores loaded, over 1000 idle through JTAG): at least one.
        self.assertGreater(samples, 0)
        self.assertEqual(sum(buckets), samples)
        per_function: dict[str, int] = {}
        for i, n in enumerate(buckets):
            if n:
                name = self.function_at(low + 2 * i) or "?"
                per_function[name] = per_function.get(name, 0) + n
        self.assertNotIn("?", per_function)
        # mixed_forever spends its time in main's loop and its callees, not in startup.
        self.assertEqual(per_function.get("Reset_Handler", 0), 0)
        # mcuprof reads OpenOCD's gmon.out like any profile: the same samples by function.
        r = subprocess.run([str(CLI), "report", str(gmon), "--elf", str(ELF), "--format", "json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        reported = {row["name"]: row["samples"] for row in doc["functions"]}
        self.assertEqual({k: v for k, v in reported.items() if v}, per_function)
        # Back-to-back reads with no passes in the file: the binomial errors are said to be too small.
        self.assertEqual((doc["errors"]["method"], doc["errors"]["lower_bounds"]), ("binomial", True))
        print(f"\nvprobe: profile: {samples} DWT_PCSR samples in {seconds:.2f} s "
              f"({samples / seconds:.0f}/s); {per_function}", file=sys.stderr)
        self.assertEqual(self.state(), "running")

    def test_7_gdb_through_openocd_stops_at_a_software_breakpoint(self):
        # GDB's breakpoints reach OpenOCD as Z0: with no flash declared, OpenOCD writes a BKPT
        # instruction, which the vprobe turns into a breakpoint of QEMU (docs/vprobe.md).
        require(("gdb-multiarch",), ())
        gdb = shutil.which("gdb-multiarch")
        r = subprocess.run([gdb, "-batch", "-nx", str(ELF), "-ex", f"target extended-remote 127.0.0.1:{self.gdb_port}",
                            "-ex", "break classify", "-ex", "continue", "-ex", "bt", "-ex", "print/x $pc",
                            "-ex", "delete", "-ex", "detach"], capture_output=True, text=True, timeout=60)
        self.assertIn("Breakpoint 1, classify ()", r.stdout, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"#1 .* in main \(\)")
        start, _ = self.functions["classify"]
        self.assertIn(f"= 0x{start:x}", r.stdout)   # GDB puts it after the prologue; here there is none
        self.assertEqual(self.state(), "halted")     # OpenOCD 0.12 leaves it halted when GDB detaches
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_8_mcuprof_tcl_client_against_this_openocd(self):
        # transport::TclClient's unit test that needs a real OpenOCD: quoting through Jim Tcl,
        # errors caught with `catch`, capture of printed output.
        require((), (UNIT_TESTS,))
        r = subprocess.run([str(UNIT_TESTS), "-tc=tcl client: against a real OpenOCD*"],
                           env={**os.environ, "MCUPROF_OPENOCD_TCL": f"127.0.0.1:{self.tcl_port}"},
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 passed", r.stdout)

    def test_8b_a_port_of_the_wrong_kind_is_named(self):
        # --gdb at OpenOCD's Tcl port: no GDB reply comes; --openocd at its GDB port: no Tcl
        # reply. Each is one line that says which port is which.
        def record(link: str, port: int):
            return subprocess.run([str(CLI), "record", link, f"127.0.0.1:{port}", "--samples", "10", "--elf",
                                   str(ELF), "-o", os.devnull], capture_output=True, text=True, timeout=120)

        for link, port, hint in (("--gdb", self.tcl_port, "is this OpenOCD's Tcl port (6666 by default, for --openocd)"),
                                 ("--openocd", self.gdb_port, "the server speaks the GDB remote protocol: use --gdb")):
            with self.subTest(link=link):
                r = record(link, port)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(hint, r.stderr)
                if link == "--openocd":
                    # OpenOCD halted the target when mcuprof's Tcl bytes attached as a GDB
                    # client; mcuprof resumed it, and said so, at once (not after a time-out).
                    self.assertIn("mcuprof resumed the target", r.stderr)
        self.tcl.run("poll")
        self.assertEqual(self.state(), "running")

    def test_9_shutdown_leaves_the_target_running(self):
        self.tcl.raw("shutdown")
        self.tcl.close()
        type(self).tcl = None
        self.assertEqual(self.openocd.wait(timeout=10), 0)
        self.assertEqual(self.vprobe.wait(timeout=10), 0)
        self.vprobe_reader.join(timeout=5)
        log = "".join(self.vprobe_log)
        self.assertIn("OpenOCD quit", log)
        self.assertIn("target detached, running", log)
        self.assertTrue(guest_running(self.qemu), "the guest is not running after shutdown")
