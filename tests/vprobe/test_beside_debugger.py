"""`mcuprof record --openocd` beside a debugger (docs/ide.md, "Beside Cortex-Debug"): the rig of
openocd_rig (QEMU running mixed_forever_m4, the vprobe, the real OpenOCD with its Tcl and GDB
ports); record samples through the Tcl port while gdb-multiarch attaches through OpenOCD's GDB
port, which halts the core, reads the PC twice, 2 s apart, and detaches (OpenOCD leaves the core
halted). Whatever the mode, the halt is the debugger's: mcuprof never resumes it.

  - halt mode: the recording ends at its next halt, which finds the core halted by someone else;
    the samples taken before are in the file; the core is left halted;
  - pcsr mode: the recording goes on; DWT_PCSR reads 0xFFFFFFFF while the core is halted, and
    those reads are dropped and counted (the samples are of the time the core ran); stopped by
    SIGINT while the debugger's halt holds, mcuprof leaves the core halted.

The halts gdb sees agree with OpenOCD's curstate; the PC does not move while the core is held.
Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import unittest

from openocd_rig import CLI, FW_DIR, RigClass, require, start_rig
from spawn import spawn

ELF = FW_DIR / "mixed_forever_m4.elf"
STARTED_BYTES = 20000   # the recording has samples in it: the sampler runs


class BesideDebugger(RigClass, unittest.TestCase):
    work_prefix = "mcuprof-debugger-"

    @classmethod
    def requirements(cls):
        require(("gdb-multiarch",), (ELF,))

    @classmethod
    def with_rig(cls):
        start_rig(cls, ELF, openocd_gdb=True)

    def setUp(self):
        if self.tcl.run("[target current] curstate") == "halted":
            self.tcl.run("resume")   # the previous test left the debugger's halt

    def record_while_gdb_halts(self, mode: str):
        """Starts the recording, lets the debugger attach, hold and detach; returns the record
        process (perhaps still running), its stderr file and the recording."""
        rec, err_path = self.work / f"{mode}.rec", self.work / f"{mode}.err"
        err = open(err_path, "w")
        self.addCleanup(err.close)
        record = spawn([str(CLI), "record", "--openocd", f"127.0.0.1:{self.tcl_port}", "--mode", mode,
                        "--elf", str(ELF), "--samples", "100000000", "-o", str(rec)],
                       stdout=subprocess.DEVNULL, stderr=err)
        self.addCleanup(lambda: record.poll() is None and (record.kill(), record.wait()))
        deadline = time.monotonic() + 120
        while not (rec.exists() and rec.stat().st_size >= STARTED_BYTES):
            self.assertIsNone(record.poll(), f"record ended before sampling: {err_path.read_text()}")
            self.assertLess(time.monotonic(), deadline, "no samples in 120 s")
            time.sleep(0.1)
        gdb = subprocess.run(["gdb-multiarch", "-batch", "-nx", "-ex", "set confirm off",
                              "-ex", f"target extended-remote 127.0.0.1:{self.gdb_port}",
                              "-ex", "info registers pc", "-ex", "shell sleep 2", "-ex", "info registers pc",
                              "-ex", "detach"], capture_output=True, text=True, timeout=120)
        pcs = re.findall(r"^pc\s+(0x[0-9a-f]+)", gdb.stdout, re.M)
        self.assertEqual(len(pcs), 2, gdb.stdout + gdb.stderr)
        self.assertEqual(pcs[0], pcs[1], "the core moved while the debugger held it")
        self.assertEqual(self.tcl.run("[target current] curstate"), "halted", "OpenOCD resumed at gdb's detach")
        return record, err_path, rec

    def report(self, rec) -> dict:
        out = subprocess.run([str(CLI), "report", str(rec), "--format", "json"], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_halt_mode_ends_and_leaves_the_debuggers_halt(self):
        record, err_path, rec = self.record_while_gdb_halts("halt")
        record.wait(timeout=120)   # its next halt finds the core halted: the recording ends
        stderr = err_path.read_text()
        self.assertEqual(record.returncode, 0, stderr)
        self.assertIn("halted by someone else", stderr)
        self.assertEqual(self.tcl.run("[target current] curstate"), "halted", stderr)
        self.assertGreater(self.report(rec)["samples"], 0)

    def test_pcsr_mode_drops_the_halted_reads_and_leaves_the_debuggers_halt(self):
        record, err_path, rec = self.record_while_gdb_halts("pcsr")
        time.sleep(0.5)   # reads while the debugger's halt still holds
        self.assertIsNone(record.poll(), f"pcsr mode goes on beside a halt: {err_path.read_text()}")
        record.send_signal(signal.SIGINT)
        record.wait(timeout=120)
        stderr = err_path.read_text()
        self.assertEqual(record.returncode, 0, stderr)
        dropped = re.search(r"(\d+) DWT_PCSR reads, (\d+) of them 0xFFFFFFFF \(core halted\) dropped", stderr)
        self.assertIsNotNone(dropped, stderr)
        reads, halted = int(dropped.group(1)), int(dropped.group(2))
        self.assertGreater(halted, 0)
        self.assertIn("halted by someone else; left halted", stderr)
        self.assertNotIn("resumed", stderr)
        self.assertEqual(self.tcl.run("[target current] curstate"), "halted", stderr)
        # The dropped reads are not samples: what is left is at most the reads that were not.
        self.assertLessEqual(self.report(rec)["samples"], reads - halted)


if __name__ == "__main__":
    unittest.main()
