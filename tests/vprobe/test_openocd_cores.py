"""Never silent about the cores a link does not sample (issue 29): OpenOCD configured with a
second cortex_m target, as a dual-core part's configuration has (configs/openocd/: one target per
core, each on its own access port), in front of the one-core vprobe. The second target is created
with -defer-examine (the vprobe has no access port 1) and no GDB port of its own. `record
--openocd` (OpenOCD's Tcl port, its current target) and `record --gdb` on OpenOCD's GDB port (the
port's target) each sample one core: every report of the recording names the other,
`qemu.cpu1 (cortex_m)`, as not sampled.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import subprocess
import tempfile
import unittest
from pathlib import Path

import fwtest
from openocd_rig import CLI, OPENOCD, require, start_rig, stop_rig

IMAGE = "mixed_forever_m4"
# The last target created is OpenOCD's current one: `targets` makes core 0 current again, as a
# dual-core configuration chooses the core its Tcl commands act on.
SECOND_CORE = ("target create qemu.cpu1 cortex_m -dap qemu.dap -ap-num 1 -defer-examine -gdb-port disabled",
               "targets qemu.cpu")
NOTICE = "not sampled: qemu.cpu1 (cortex_m)"


class OtherTargetNamed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, fwtest.elf_path(IMAGE)))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-openocd-cores-"))
        try:
            start_rig(cls, fwtest.elf_path(IMAGE), openocd_gdb=True, openocd_commands=SECOND_CORE)
            cls.runs = {}
            for name, link in (("tcl", ["--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt"]),
                               ("gdb", ["--gdb", f"127.0.0.1:{cls.gdb_port}"])):
                rec = cls.work / f"{name}.rec"
                record = subprocess.run([str(CLI), "record", *link, "--samples", "20", "--elf",
                                         str(fwtest.elf_path(IMAGE)), "-o", str(rec)],
                                        capture_output=True, text=True, timeout=300)
                report = subprocess.run([str(CLI), "report", str(rec), "--elf", str(fwtest.elf_path(IMAGE))],
                                        capture_output=True, text=True, timeout=300)
                cls.runs[name] = (record, report)
        finally:
            stop_rig(cls)

    def check(self, name: str):
        record, report = self.runs[name]
        self.assertEqual(record.returncode, 0, record.stderr)
        self.assertIn(NOTICE, record.stdout)
        self.assertEqual(report.returncode, 0, report.stderr)
        self.assertIn(NOTICE, report.stdout)
        self.assertNotIn("qemu.cpu (", report.stdout)   # the sampled core is not among the others

    def test_tcl_port_names_the_other_core(self):
        self.check("tcl")

    def test_gdb_port_names_the_other_core(self):
        self.check("gdb")


if __name__ == "__main__":
    unittest.main()
