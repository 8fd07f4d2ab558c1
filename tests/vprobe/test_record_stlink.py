"""`mcuprof record --openocd` through an ST-Link over SWD: the rigs and checks of
test_record_openocd.py (halt mode within 4 standard errors of the truth plugin, pcsr mode's hot
functions, `top`, SIGINT, a core without DWT_PCSR, OpenOCD killed) with OpenOCD's st-link
driver in front of `mcuprof vprobe --stlink-port` (configs/openocd/qemu-stlink.cfg), on both
transports; and one more end: the probe link dropped in the middle of a recording (the TCP
connection between OpenOCD and the probe cut by a proxy, as a USB cable pulled out).

Checked for the dropped link: the recording ends by itself with one line naming OpenOCD's
error, every sample it said it recorded is in its file, the vprobe sees OpenOCD go, detaches
and exits 0, and the guest runs on. The image never ends (mixed_forever_m4); recordings end by
sample count, or by the fault.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import test_record_openocd as jtag  # noqa: E402  (as a module: its classes are not collected here)
from fault_proxy import FaultProxy, Faults  # noqa: E402
from test_vprobe_openocd import guest_running, require, shut_down_openocd, start_rig, stop_rig  # noqa: E402


class RecordThroughStlinkDapDirect(jtag.RecordThroughOpenOCD):
    stlink_transport = "dapdirect_swd"


class RecordThroughStlinkHla(jtag.RecordThroughOpenOCD):
    stlink_transport = "hla_swd"


class WithoutPcsrThenOpenOCDKilledStlink(jtag.WithoutPcsrThenOpenOCDKilled):
    stlink_transport = "dapdirect_swd"


class PcsrThroughProfileChunks(unittest.TestCase):
    """`--mode pcsr --pcsr-read profile` through dapdirect_swd: DWT_PCSR read by OpenOCD's own
    `profile` in chunks of 1024 (docs/live.md). Exactly the samples asked for, every one inside
    a function the truth saw execute, the reads accounted for in the closing event, the target
    left running."""
    stlink_transport = "dapdirect_swd"
    SAMPLES = 2048

    @classmethod
    def setUpClass(cls):
        require((jtag.OPENOCD, "arm-none-eabi-nm"), (jtag.CLI, jtag.ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
        try:
            truth = cls.work / "truth.txt"
            start_rig(cls, jtag.ELF, truth=truth, singlestep=True)
            cls.result = subprocess.run(jtag.record(cls.tcl_port, "pcsr", "--pcsr-read", "profile", "--samples",
                                                    str(cls.SAMPLES), rec=cls.work / "chunks.rec"),
                                        capture_output=True, text=True, timeout=300)
            cls.state = cls.tcl.run("[target current] curstate").strip()
            shut_down_openocd(cls)
            cls.qemu.stop()
            cls.truth = jtag.by_function(jtag.read_truth(truth), jtag.elf_functions(jtag.ELF))
        finally:
            stop_rig(cls)

    def test_the_samples_and_their_hot_functions(self):
        r = self.result
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.state, "running")
        print(f"\n{r.stderr.strip()}", file=sys.stderr)
        # Every sample inside a function the truth saw execute. No share bound: the 1024 reads
        # of a chunk follow one another back to back, so the chunks (2 here), not the reads,
        # are the independent samples (see test_record_openocd.py's pcsr bounds).
        jtag.observed_shares(self, json.loads(r.stdout), self.SAMPLES, self.truth)
        reads = re.search(r"OpenOCD's profile read DWT_PCSR (\d+) times: (\d+) outside .*, (\d+) placing", r.stderr)
        self.assertIsNotNone(reads, r.stderr)
        total, outside, unused = map(int, reads.groups())
        self.assertEqual(total - outside - unused, self.SAMPLES)


class ProbeLinkDropped(unittest.TestCase):
    """The link between OpenOCD and the probe breaks during a halt-mode recording."""
    stlink_transport = "hla_swd"

    @classmethod
    def setUpClass(cls):
        require((jtag.OPENOCD,), (jtag.CLI, jtag.ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
        cls.proxy = None
        try:
            cls._run()
        finally:
            if cls.proxy is not None:
                cls.proxy.close()
            stop_rig(cls)

    @classmethod
    def probe_link(cls, probe_port: int) -> int:
        cls.proxy = FaultProxy(probe_port, Faults())
        return cls.proxy.port

    @classmethod
    def _run(cls):
        start_rig(cls, jtag.ELF)
        rec = cls.work / "dropped.rec"
        p = subprocess.Popen(jtag.record(cls.tcl_port, "halt", "--samples", "10000000", rec=rec),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            jtag.wait_for_samples(p, rec, 20)
            cls.proxy.close()   # both connections close: the probe is gone for OpenOCD
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        cls.dropped = (p.returncode, out, err, jtag.report_json(rec))
        print(f"\nprobe link dropped during a recording: exit {p.returncode}\n{err}", file=sys.stderr)
        cls.vprobe_code = cls.vprobe.wait(timeout=10)
        cls.vprobe_reader.join(timeout=5)
        cls.guest_running = guest_running(cls.qemu.gdb_port)

    def test_the_recording_ends_with_every_sample_in_its_file(self):
        code, out, err, doc = self.dropped
        # OpenOCD stays up and answers with an error: the recording ends (exit 0) saying so.
        self.assertEqual(code, 0, err)
        last = err.strip().splitlines()[-1]
        self.assertIn("OpenOCD reported an error", last)
        said = int(re.search(r"(\d+) samples", last).group(1))
        self.assertGreater(said, 0)
        self.assertEqual(doc["samples"], said)
        self.assertEqual(json.loads(out)["samples"], said)

    def test_the_vprobe_detaches_and_the_guest_runs(self):
        self.assertEqual(self.vprobe_code, 0, "".join(self.vprobe_log))
        self.assertIn("OpenOCD disconnected", "".join(self.vprobe_log))
        self.assertTrue(self.guest_running, "the guest is not running after the probe link dropped")


if __name__ == "__main__":
    unittest.main()
