"""mcuprof record through a fault-injecting proxy (fault_proxy.py), between it and QEMU's
gdbstub (RSP) and between it and OpenOCD's Tcl port (QEMU + mcuprof vprobe + OpenOCD):
delays, dropped bytes, corrupted RSP checksums, a disconnect in the middle of a packet, a
server that is gone.

For every fault mcuprof either recovers (delays; bad checksums, which it NAKs and the stub
resends) or stops with what it has: one line saying why, exit code 3 (link lost) or 2
(nothing recorded), and a samples file that `mcuprof report` reads, holding exactly the
samples mcuprof said it wrote. The target is left running whenever the link allows: checked
with a fresh GDB connection to QEMU, or a fresh Tcl connection to OpenOCD.

Ports are chosen at run time; every process and proxy started here is stopped on every path."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import qemu_runner  # noqa: E402
from fault_proxy import FaultProxy, Faults  # noqa: E402
from openocd_rig import CLI, FW_DIR, OPENOCD, STRICT, RigClass, guest_running, require, start_rig

ELF = FW_DIR / "mixed_forever_m4.elf"
SAID = re.compile(r"^mcuprof record: (\d+) samples in ", re.M)

# What the runs injected, printed at the end for docs/reliability.md.
TALLY = {"faults": 0, "samples_said": 0, "samples_in_files": 0, "runs": []}


def record(link: str, port: int, rec: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), "record", link, f"127.0.0.1:{port}", *options, "--elf", str(ELF), "-o", str(rec),
                           "--format", "json"], capture_output=True, text=True, timeout=600)


def samples_in(rec: Path) -> int:
    r = subprocess.run([str(CLI), "report", str(rec), "--elf", str(ELF), "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"mcuprof report {rec} failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)["samples"]


def skip_without(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            if STRICT:
                raise AssertionError(f"{path} is missing (make build)")
            raise unittest.SkipTest(f"{path} is missing (make build)")


class Checks(unittest.TestCase):
    def ended_with_what_it_had(self, r: subprocess.CompletedProcess, rec: Path, proxy: FaultProxy,
                               codes=(0, 3)) -> int:
        """The end of a run that met faults: an expected exit code, no crash, the file holds
        every sample the summary line announced. Returns that count."""
        self.assertIn(r.returncode, codes, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        said = SAID.search(r.stderr)
        self.assertIsNotNone(said, r.stderr)
        said = int(said.group(1))
        self.assertGreater(said, 0)
        in_file = samples_in(rec)
        self.assertEqual(in_file, said, "samples lost between mcuprof and its file")
        if r.returncode == 3:
            self.assertRegex(r.stderr.strip().splitlines()[-1], r"^mcuprof record: stopped early, the link was lost")
        self.assertGreater(proxy.faults_injected, 0, "no fault was injected")
        TALLY["faults"] += proxy.faults_injected
        TALLY["samples_said"] += said
        TALLY["samples_in_files"] += in_file
        end = re.search(r"; ([^;]*); samples in ", r.stderr)
        TALLY["runs"].append(f"{self.id().split('.', 1)[1]}: exit {r.returncode}, {proxy.faults_injected} faults, "
                             f"{said} samples, {proxy.naks} NAKs, end: {end.group(1) if end else '?'}")
        return said

    def server_gone(self, link: str) -> None:
        with tempfile.TemporaryDirectory() as work, FaultProxy(1, Faults(refuse=True)) as proxy:
            r = record(link, proxy.port, Path(work) / "rec.bin", "--samples", "10")
            self.assertEqual(r.returncode, 2, r.stderr)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertTrue(lines[0].startswith("mcuprof record: "), lines[0])
            TALLY["faults"] += proxy.faults_injected


class RspFaults(Checks):
    """mcuprof record --gdb through the proxy to QEMU's gdbstub; a fresh QEMU per test."""

    def setUp(self):
        skip_without(CLI, ELF)
        self.work = Path(tempfile.mkdtemp(prefix="mcuprof-faults-"))
        self.addCleanup(shutil.rmtree, self.work, True)
        self.qemu = qemu_runner.QemuRun(ELF, gdb=True, qmp=True, uart=None, timeout=300).start()
        self.addCleanup(self.qemu.close)

    def run_through(self, faults: Faults, *options: str):
        rec = self.work / "rec.bin"
        with FaultProxy(self.qemu.gdb_port, faults) as proxy:
            r = record("--gdb", proxy.port, rec, "--interval", "200us", *options)
        return r, rec, proxy

    def test_bad_checksums_are_naked_and_resent(self):
        r, rec, proxy = self.run_through(Faults(corrupt_rsp=25, corrupt_after_packets=40), "--samples", "400")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ended_with_what_it_had(r, rec, proxy), 400)
        self.assertEqual(proxy.naks, proxy.faults_injected)   # each corrupted packet NAKed once
        self.assertTrue(guest_running(self.qemu))

    def test_delays_lose_nothing(self):
        r, rec, proxy = self.run_through(Faults(delay=0.002), "--samples", "100")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ended_with_what_it_had(r, rec, proxy), 100)
        self.assertTrue(guest_running(self.qemu))

    def test_dropped_bytes(self):
        r, rec, proxy = self.run_through(Faults(drop=(20000, 5)), "--samples", "1000")
        self.ended_with_what_it_had(r, rec, proxy)
        if r.returncode == 0:   # recovered (a NAK and a resend, or a timeout on a lost ack)
            self.assertTrue(guest_running(self.qemu))

    def test_disconnect_mid_packet(self):
        r, rec, proxy = self.run_through(Faults(cut_after=20000), "--samples", "100000")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.ended_with_what_it_had(r, rec, proxy)
        # The link is gone, not the server: mcuprof reconnects to leave the target running.
        self.assertTrue(guest_running(self.qemu))

    def test_server_gone(self):
        self.server_gone("--gdb")


class TclFaults(RigClass, Checks):
    """mcuprof record --openocd through the proxy to OpenOCD's Tcl port; one QEMU + vprobe +
    OpenOCD rig for the class, asked directly (its own Tcl connection) whether the target runs."""
    work_prefix = "mcuprof-faults-tcl-"

    @classmethod
    def requirements(cls):
        require((OPENOCD,), (CLI, ELF))

    @classmethod
    def with_rig(cls):
        start_rig(cls, ELF)

    def run_through(self, faults: Faults, *options: str):
        rec = self.work / "rec.bin"
        with FaultProxy(self.tcl_port, faults) as proxy:
            r = record("--openocd", proxy.port, rec, *options)
        return r, rec, proxy

    def state(self) -> str:
        return self.tcl.run("[target current] curstate").strip()

    def test_delays_lose_nothing(self):
        r, rec, proxy = self.run_through(Faults(delay=0.002), "--mode", "halt", "--samples", "40")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ended_with_what_it_had(r, rec, proxy), 40)
        self.assertEqual(self.state(), "running")

    def test_disconnect_mid_reply(self):
        for mode in ("halt", "pcsr"):
            with self.subTest(mode=mode):
                r, rec, proxy = self.run_through(Faults(cut_after=3000), "--mode", mode, "--samples", "100000")
                self.assertEqual(r.returncode, 3, r.stderr)
                self.ended_with_what_it_had(r, rec, proxy)
                # OpenOCD ran the whole script (the halt script resumes in it): running.
                self.assertEqual(self.state(), "running")

    def test_dropped_bytes(self):
        r, rec, proxy = self.run_through(Faults(drop=(2000, 5)), "--mode", "pcsr", "--samples", "2000")
        self.ended_with_what_it_had(r, rec, proxy)
        self.assertEqual(self.state(), "running")

    def test_server_gone(self):
        self.server_gone("--openocd")


def tearDownModule():
    print("\n" + "\n".join(TALLY["runs"]), file=sys.stderr)
    print(f"\nfaults injected {TALLY['faults']}, samples announced {TALLY['samples_said']}, "
          f"samples in the files {TALLY['samples_in_files']}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
