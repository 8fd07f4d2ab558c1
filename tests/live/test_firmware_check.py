"""The target checked against the ELF before the first sample (issue 25), on every live link:
the vector table and a spread of code words read back from target memory, and CPUID against
the ELF's build attributes.

- QEMU's gdbstub running loops_forever_m4 (netduinoplus2, a Cortex-M4), recorded with the
  ELF of loops_m0 (an ARMv6-M image, other code): exit 2, one line naming what differs (the
  vector table, and the Cortex-M4 against ARMv6-M), and the guest left running (QMP query-status); with --no-verify the same recording samples, warns, and
  keeps the warning in the recording, which every report of it shows.
- The right ELF over the same link: samples, and the recording says it was verified.
- OpenOCD's Tcl port through the vprobe (tests/pylib/openocd_rig.py) on the same image: the
  wrong ELF is refused likewise, and the target still runs (OpenOCD's curstate).
- record --qemu with the ELF of loops_m0 on netduinoplus2 (QEMU loads the image mcuprof is given,
  so what can be wrong there is the board: a Cortex-M4 under an ARMv6-M image, whose code it
  runs): exit 2, one line naming the CPUID against ARMv6-M, and no QEMU left behind; with
  --no-verify the same recording samples, warns, and keeps the warning in the recording; the
  right image's recording (mixed_m4) says it was verified, vector table, code and CPUID.
- record --qemu --stacks on an RTOS image (fpu_o2_m4): verified, and strace shows mcuprof's own
  process (its threads, not QEMU) opening the ELF once.

Each QEMU, vprobe and OpenOCD is started here on free ports and stopped on every path."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from live_runs import mcuprof
from openocd_rig import OPENOCD, require, start_rig, stop_rig
from process_table import alive, children_of
from spawn import spawn

RUNNING = "loops_forever_m4"
WRONG = "loops_m0"


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


class OverGdb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-fwcheck-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def record(self, q, elf: Path, rec: Path, *extra: str):
        return mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "200", "--interval", "200us",
                       "--elf", str(elf), "-o", str(rec), *extra)

    def test_wrong_image_is_refused_and_the_target_runs_on(self):
        rec = self.work / "wrong.rec"
        with qemu_runner.QemuRun(fwtest.elf_path(RUNNING), gdb=True, halted=True, qmp=True, uart=None,
                                 timeout=600) as q:
            r = self.record(q, fwtest.elf_path(WRONG), rec)
            self.assertEqual(r.returncode, 2, r.stderr)
            line = one_line(r.stderr)
            self.assertIn("does not run", line)
            self.assertIn("the vector table at 0x", line)
            self.assertIn("Cortex-M4", line)
            self.assertRegex(line, r"built for ARMv6S?-M")
            self.assertIn("--no-verify", line)
            self.assertEqual(q.qmp("query-status")["status"], "running")

            warned = self.work / "warned.rec"
            r = self.record(q, fwtest.elf_path(WRONG), warned, "--no-verify", "--format", "json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("warning: the target does not run", r.stderr)
            self.assertEqual(q.qmp("query-status")["status"], "running")
        again = mcuprof("report", str(warned), "--elf", str(fwtest.elf_path(WRONG)))
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("the target does not run", again.stdout + again.stderr)

    def test_right_image_is_verified_in_the_recording(self):
        rec = self.work / "right.rec"
        with qemu_runner.QemuRun(fwtest.elf_path(RUNNING), gdb=True, halted=True, uart=None, timeout=600) as q:
            r = self.record(q, fwtest.elf_path(RUNNING), rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("does not run", r.stderr)
        data = rec.read_bytes()
        self.assertIn(b'"firmware-verified"', data)
        self.assertRegex(data.decode("latin-1"), r"5 of 5 regions \(vector table, code\) equal the ELF's, "
                                                 r"CPUID 0x410fc24\d \(Cortex-M4\) fits ARMv7E-M")


class OverOpenocd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (fwtest.CLI, fwtest.elf_path(RUNNING)))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-fwcheck-openocd-"))
        try:
            start_rig(cls, fwtest.elf_path(RUNNING))
            cls.results = {}
            for mode in ("halt", "pcsr"):
                r = mcuprof("record", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", mode, "--samples", "100",
                            "--elf", str(fwtest.elf_path(WRONG)), "-o", str(cls.work / f"{mode}.rec"))
                cls.results[mode] = (r, cls.tcl.run("[target current] curstate").strip())
        finally:
            stop_rig(cls)

    def test_wrong_image_is_refused_in_both_modes(self):
        for mode, (r, state) in self.results.items():
            with self.subTest(mode=mode):
                self.assertEqual(r.returncode, 2, r.stderr)
                line = one_line(r.stderr)
                self.assertIn("does not run", line)
                self.assertIn("Cortex-M4", line)
                self.assertEqual(state, "running")


class OverQemu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-fwcheck-qemu-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def record(self, elf: str, rec: Path, *extra: str) -> tuple[subprocess.CompletedProcess, list[int]]:
        """record --qemu, and the QEMUs it started still alive after it exited (its children,
        read from the process table while it ran)."""
        command = [str(fwtest.CLI), "record", "--qemu", "netduinoplus2", "--samples", "50", "--elf", str(fwtest.elf_path(elf)), "-o", str(rec), *extra]
        with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
            proc = spawn(command, stdout=out, stderr=err, text=True)
            children, deadline = set(), time.monotonic() + 600
            while proc.poll() is None:
                children |= children_of(proc.pid)
                if time.monotonic() > deadline:
                    proc.kill()
                    self.fail("record --qemu did not finish in 600 s")
                time.sleep(0.05)
            out.seek(0)
            err.seek(0)
            result = subprocess.CompletedProcess(command, proc.returncode, out.read(), err.read())
        return result, [pid for pid in children if alive(pid)]

    def test_wrong_board_for_the_image_is_refused_and_qemu_stopped(self):
        r, left = self.record(WRONG, self.work / "wrong.rec")
        self.assertEqual(r.returncode, 2, r.stderr)
        line = one_line(r.stderr)
        self.assertIn("does not run", line)
        self.assertIn("Cortex-M4", line)
        self.assertRegex(line, r"built for ARMv6S?-M")
        self.assertNotIn("vector table", line)   # the image QEMU runs is the ELF's: only the core differs
        self.assertIn("--no-verify", line)
        self.assertEqual(left, [])

        warned = self.work / "warned.rec"
        r, left = self.record(WRONG, warned, "--no-verify")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: the target does not run", r.stderr)
        self.assertEqual(left, [])
        self.assertIn(b'"firmware-mismatch"', warned.read_bytes())
        again = mcuprof("report", str(warned), "--elf", str(fwtest.elf_path(WRONG)))
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertRegex(again.stdout + again.stderr, r"the target does not run .*built for ARMv6S?-M")

    def test_right_image_is_verified_in_the_recording(self):
        rec = self.work / "right.rec"
        r, left = self.record("mixed_m4", rec)   # a finite M4 image: sampled over its whole run
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(left, [])
        self.assertNotIn("does not run", r.stderr)
        data = rec.read_bytes()
        self.assertIn(b'"firmware-verified"', data)
        self.assertRegex(data.decode("latin-1"), r"5 of 5 regions \(vector table, code\) equal the ELF's, "
                                                 r"CPUID 0x410fc24\d \(Cortex-M4\) fits ARMv7E-M")


class QemuOpensTheElfOnce(unittest.TestCase):
    def test_record_qemu_stacks_on_an_rtos_image(self):
        if shutil.which("strace") is None:
            self.fail("strace is missing (scripts/setup.sh installs it)")
        work = Path(tempfile.mkdtemp(prefix="mcuprof-fwcheck-strace-"))
        try:
            elf = fwtest.elf_path("fpu_o2_m4")
            log, rec = work / "strace.log", work / "rec.bin"
            r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,open,execve", "-o", str(log),
                                str(fwtest.CLI), "record", "--qemu", "netduinoplus2", "--stacks", "--samples", "100",
                                "--elf", str(elf), "-o", str(rec)],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(b'"firmware-verified"', rec.read_bytes())
            # mcuprof's threads share its process; QEMU and the rest are children that exec.
            first, others, opens = None, set(), []
            for line in log.read_text().splitlines():
                pid = int(line.split()[0])
                if "execve(" in line:
                    if first is None:
                        first = pid
                    else:
                        others.add(pid)
                elif re.search(r'open(at)?\(.*"' + re.escape(str(elf)) + '"', line) and "= -1" not in line:
                    opens.append(pid)
            mine = [pid for pid in opens if pid not in others]
            self.assertEqual(len(mine), 1, log.read_text()[-4000:])
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
