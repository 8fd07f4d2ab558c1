"""Live sampling over a serial GDB link: `mcuprof record --gdb DEVICE --baud N`, where a probe
that is itself a GDB server (a Black Magic Probe on /dev/ttyACM0) would be. The line here is a
pty that socat bridges, byte for byte, to QEMU's gdbstub. The never-ending three-loop image is
sampled by wall clock until a sample count (so the test takes as many samples on a slow or a
loaded machine); every loop's share must be within 4 standard errors (from the spread between
batches of consecutive halts) of the truth plugin's census of the same run, as over TCP
(test_live_rsp.py, WallClockPacing)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
import fwtest
import run_header
from live_runs import mcuprof, three_loops_within_4_se, time_census_of
from spawn import spawn


class PtyBridge:
    """socat between a pty (its slave side linked at `path`) and a TCP port; stopped and
    waited for when the block ends."""

    def __init__(self, path: Path, port: int):
        socat = shutil.which("socat")
        if socat is None:
            fwtest._missing("socat is not installed (Debian package socat)")
        self.path = path
        self.process = spawn([socat, f"PTY,link={path},raw,echo=0", f"TCP:127.0.0.1:{port}"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)

    def __enter__(self) -> "PtyBridge":
        deadline = time.monotonic() + 60
        while not self.path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise AssertionError(f"socat made no pty: {self.process.stderr.read()[-400:]}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stderr.close()


class SerialLink(unittest.TestCase):
    def test_three_loops_over_a_pty_against_truth(self):
        name = "loops_forever_m4"
        elf = fwtest.elf_path(name)
        work = Path(tempfile.mkdtemp(prefix="mcuprof-serial-"))
        self.addCleanup(shutil.rmtree, work, True)
        rec, tty = work / "rec.bin", work / "gdb-tty"

        def record(q):
            with PtyBridge(tty, q.gdb_port):
                return mcuprof("record", "--gdb", str(tty), "--baud", "115200", "--interval", "5ms",
                               "--samples", "5000", "--elf", str(elf), "-o", str(rec), "--format", "json")

        result, times, stalls = time_census_of(elf, work, name, record)
        three_loops_within_4_se(self, result, name, times, rec, stalls)
        # The recording's header (docs/formats.md: magic, u32 version, u32 length, JSON) names
        # the line it came over.
        self.assertEqual(run_header.read_header(rec)["gdb"], str(tty))

    def test_missing_device_is_one_line_naming_it(self):
        elf = fwtest.elf_path("loops_forever_m4")
        missing = "/dev/mcuprof-no-such-tty"
        result = mcuprof("record", "--gdb", missing, "--samples", "10", "--elf", str(elf), "-o", "/dev/null")
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(missing, lines[0])

    def test_baud_with_a_tcp_port_is_refused(self):
        elf = fwtest.elf_path("loops_forever_m4")
        result = mcuprof("record", "--gdb", "127.0.0.1:1", "--baud", "9600", "--samples", "10",
                         "--elf", str(elf), "-o", "/dev/null")
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--baud", result.stderr)


if __name__ == "__main__":
    unittest.main()
