"""The example configs for real boards (configs/openocd/stm32f4-*.cfg) as OpenOCD 0.12 reads
them, without a probe: every command of the configuration stage runs (the `find`s of the
shipped interface and target scripts, the adapter driver, the transport, the DAP, the target
and its flash banks, the ports), then `shutdown` ends OpenOCD before `init` would open USB.
Checked: exit 0, and the adapter, transport, target and SWD clock each file means."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import doc_lines

REPO = Path(__file__).resolve().parents[2]
OPENOCD = os.environ.get("MCUPROF_OPENOCD", "openocd")
STRICT = bool(os.environ.get("MCUPROF_UNDER_CTEST"))

# file -> (adapter driver, transport, SWD clock in kHz)
EXPECTED = {
    "stm32f4-stlink.cfg": ("hla", "hla_swd", 4000),
    "stm32f4-cmsis-dap.cfg": ("cmsis-dap", "swd", 2000),
    "stm32f4-jlink.cfg": ("jlink", "swd", 4000),
}

PROBE = 'echo "CHECK [adapter name] [transport select] [target names] [adapter speed]"; shutdown'


class OpenOCDConfigs(unittest.TestCase):
    def setUp(self):
        if shutil.which(OPENOCD) is None:
            if STRICT:
                raise AssertionError("openocd is not installed")
            self.skipTest("openocd is not installed")

    def test_each_config_parses_with_its_settings(self):
        for name, (adapter, transport, khz) in EXPECTED.items():
            with self.subTest(config=name), tempfile.TemporaryDirectory() as elsewhere:
                # Run from another folder: the shared part is found next to the file, not in the cwd.
                r = subprocess.run([OPENOCD, "-f", str(REPO / "configs" / "openocd" / name), "-c", PROBE],
                                   capture_output=True, text=True, timeout=30, cwd=elsewhere)
                self.assertEqual(r.returncode, 0, r.stderr)
                check = next(line for line in r.stderr.splitlines() if line.startswith("CHECK"))
                self.assertEqual(check.split()[1:4], [adapter, transport, "stm32f4x.cpu"])
                self.assertIn(f"adapter speed: {khz} kHz", check)

    def test_each_documented_board_line_parses(self):
        # The board lines README.md and docs/ show (an ST-Link, a CMSIS-DAP, a J-Link), run as
        # written up to the configuration's end: a transport set on the line is the one taken.
        lines = {line: wheres for line, wheres in doc_lines.documented("openocd").items()
                 if re.search(r"configs/openocd/stm32f4-\S+\.cfg", line)}
        self.assertTrue(any("dapdirect_swd" in line for line in lines), lines)
        for line, wheres in sorted(lines.items()):
            with self.subTest(line=line, found_in=wheres):
                r = subprocess.run([OPENOCD, *shlex.split(line)[1:], "-c", PROBE], capture_output=True, text=True,
                                   timeout=30, cwd=REPO)
                self.assertEqual(r.returncode, 0, r.stderr)
                check = next(l for l in r.stderr.splitlines() if l.startswith("CHECK"))
                if "STLINK_TRANSPORT dapdirect_swd" in line:
                    self.assertEqual(check.split()[2], "dapdirect_swd", check)

    def test_a_missing_script_fails(self):
        # The check above would notice a config that does not parse: a `find` that fails is exit 1.
        with tempfile.TemporaryDirectory() as work:
            bad = Path(work) / "bad.cfg"
            bad.write_text("source [find interface/no-such-probe.cfg]\n")
            r = subprocess.run([OPENOCD, "-f", str(bad), "-c", PROBE], capture_output=True, text=True, timeout=30)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("Can't find interface/no-such-probe.cfg", r.stderr)


if __name__ == "__main__":
    unittest.main()
