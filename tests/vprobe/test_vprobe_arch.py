"""OpenOCD's generic cortex_m target through the virtual probe, on the never-ending image of every
board in firmware-ref's board table (issue 28): it examines the core QEMU runs (the vprobe's
debug unit answers with the target's own CPUID), halts it in a function of the image and lets
it run again, and `mcuprof record --mode pcsr` samples DWT_PCSR where the architecture has it
(ARMv7-M, ARMv8-M Mainline) and falls back to halting, with its notice, where it has none
(ARMv6-M: the Cortex-M0 of microbit)."""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from elf_symbols import nm_symbols
from openocd_rig import CLI, FW_DIR, OPENOCD, require, start_rig, stop_rig

SAMPLES = 200


class ArchThroughVprobe(unittest.TestCase):
    def check(self, name: str, core: str, pcsr: bool):
        elf = FW_DIR / f"{name}.elf"
        require((OPENOCD,), (CLI, elf))
        rig = type("Rig", (), {})()
        rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-arch-"))
        try:
            start_rig(rig, elf)
            rig.tcl.run("poll")
            log = (rig.work / "openocd.log").read_text()
            self.assertRegex(log, rf"{core} r\dp\d processor detected", log[-2000:])

            # Weak symbols too: a halt may land in libgcc's soft float (__aeabi_fmul is weak).
            functions = {s.name: (s.start, s.start + s.size) for s in nm_symbols(elf, "TtWw") if s.size > 0}
            rig.tcl.run("halt")
            match = re.search(r":\s*(0x[0-9a-fA-F]+)", rig.tcl.run("reg pc"))
            self.assertIsNotNone(match)
            pc = int(match.group(1), 16)
            self.assertTrue(any(start <= pc < end for start, end in functions.values()), f"pc 0x{pc:08x}")
            rig.tcl.run("resume")

            r = subprocess.run([str(CLI), "record", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", "pcsr",
                                "--samples", str(SAMPLES), "--elf", str(elf), "-o", str(rig.work / "rec.bin"),
                                "--format", "json"], capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(r.stdout)
            self.assertGreaterEqual(doc["samples"], SAMPLES)
            if pcsr:
                self.assertIn("pcsr", doc["sampler"], r.stderr)
                self.assertNotIn("DWT_PCSR reads 0", r.stderr)
            else:
                self.assertIn("DWT_PCSR reads 0", r.stderr)
                self.assertIn("sampling in halt mode instead", r.stderr)
                self.assertNotIn("pcsr", doc["sampler"])
        finally:
            stop_rig(rig)

    def test_microbit_cortex_m0_has_no_pcsr(self):
        self.check("arch_forever_microbit", "Cortex-M0", pcsr=False)

    def test_an385_cortex_m3(self):
        self.check("arch_forever_an385", "Cortex-M3", pcsr=True)

    def test_an500_cortex_m7(self):
        self.check("arch_forever_an500", "Cortex-M7", pcsr=True)

    def test_an505_cortex_m33(self):
        self.check("arch_forever_an505", "Cortex-M33", pcsr=True)

    def test_an505_cortex_m33_nonsecure_behind_the_secure_boot(self):
        self.check("arch_ns_forever_an505", "Cortex-M33", pcsr=True)

    def test_an547_cortex_m55(self):
        self.check("arch_forever_an547", "Cortex-M55", pcsr=True)


if __name__ == "__main__":
    unittest.main()
