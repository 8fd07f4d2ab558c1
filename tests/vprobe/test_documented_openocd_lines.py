"""Every OpenOCD command line that `mcuprof vprobe --help` prints and that the docs show for the
virtual probe works as written: the lines are read from the help text and from the code of
README.md and docs/*.md (doc_lines), and each is run against QEMU behind `mcuprof vprobe`.

What is changed in a line before it runs, and only that: the probe's port (`N` or the example
port after `remote_bitbang port`, `st-link backend tcp` or `hla_stlink_backend tcp`) becomes
the port the vprobe got; OpenOCD's own ports are disabled first (`-c "gdb_port disabled"` ...
before the line's own options: a line that sets them later still wins, and two tests never
share a port); and after the line's `-c init`, `poll`, an echo of the target's name and state,
and `shutdown`. Checked: OpenOCD exits 0 and sees its target running or halted, the vprobe
then ends on OpenOCD's disconnect, and QEMU's guest still runs.

Lines for real boards (configs/openocd/stm32f4-*.cfg) need a probe on USB; the configuration
stage of those files is checked by test_openocd_configs. Ports are chosen at run time; every
process started here is stopped on every path."""
from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
import unittest
from pathlib import Path

import doc_lines
import qemu_runner
from openocd_rig import CLI, ELF, OPENOCD, REPO, guest_running, require, stop_process
from spawn import spawn

# The virtual probe's own configurations: a line naming one of these runs here.
VPROBE_CONFIGS = ("configs/openocd/qemu-vprobe.cfg", "configs/openocd/qemu-stlink.cfg")
PROBE_PORT = re.compile(r"(remote_bitbang port|st-link backend tcp|hla_stlink_backend tcp) (N|\d+)")


def documented_lines() -> dict[str, list[str]]:
    """Each vprobe OpenOCD line of the help text and the docs, with where it was found."""
    help_text = subprocess.run([str(CLI), "vprobe", "--help"], capture_output=True, text=True, timeout=30)
    lines = doc_lines.documented("openocd", [("mcuprof vprobe --help", help_text.stdout + help_text.stderr)])
    return {line: wheres for line, wheres in lines.items() if any(c in line for c in VPROBE_CONFIGS)}


class DocumentedOpenOCDLines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, ELF))
        cls.lines = documented_lines()
        cls.qemu = qemu_runner.QemuRun(ELF, gdb=True, halted=True, qmp=True, uart=None, timeout=600).start()

    @classmethod
    def tearDownClass(cls):
        cls.qemu.close()

    def test_the_help_and_the_docs_show_both_probes(self):
        # What the help text prints is among the lines run: it cannot drift from the test.
        wheres = {w for ws in self.lines.values() for w in ws}
        self.assertIn("mcuprof vprobe --help", wheres)
        self.assertTrue(any("remote_bitbang" in l for l in self.lines), self.lines)
        self.assertTrue(any("st-link backend" in l for l in self.lines), self.lines)
        self.assertTrue(any("hla_stlink_backend" in l for l in self.lines), self.lines)

    def test_each_line_reaches_the_target(self):
        for line, wheres in sorted(self.lines.items()):
            with self.subTest(line=line, found_in=wheres):
                self.run_line(line)

    def run_line(self, line: str) -> None:
        match = PROBE_PORT.search(line)
        self.assertIsNotNone(match, f"no probe port in {line!r}")
        stlink = "remote_bitbang" not in match.group(1)
        vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{self.qemu.gdb_port}",
                        "--stlink-port" if stlink else "--port", "0"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
        openocd = None
        try:
            first = vprobe.stderr.readline()
            port = re.search(r"(?:remote_bitbang|st-link) on 127\.0\.0\.1:(\d+)", first)
            self.assertIsNotNone(port, first)
            words = shlex.split(PROBE_PORT.sub(lambda m: f"{m.group(1)} {port.group(1)}", line))
            self.assertEqual(words[-2:], ["-c", "init"], f"the line does not end in init: {line!r}")
            command = [OPENOCD, "-c", "gdb_port disabled", "-c", "telnet_port disabled", "-c", "tcl_port disabled",
                       *words[1:], "-c", "poll", "-c", "echo \"CHECK [target names] [[target current] curstate]\"",
                       "-c", "shutdown"]
            with tempfile.TemporaryFile("w+") as log:
                openocd = spawn(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
                code = openocd.wait(timeout=120)
                log.seek(0)
                output = log.read()
            self.assertEqual(code, 0, output)
            check = re.search(r"^CHECK (\S+) (\S+)$", output, flags=re.M)
            self.assertIsNotNone(check, output)
            self.assertIn(check.group(2), ("running", "halted"), output)
            self.assertEqual(vprobe.wait(timeout=30), 0, vprobe.stderr.read())
            self.assertTrue(guest_running(self.qemu))
        finally:
            stop_process(openocd)
            stop_process(vprobe)
            vprobe.stderr.close()


if __name__ == "__main__":
    unittest.main()
