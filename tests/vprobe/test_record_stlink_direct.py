"""`mcuprof record --stlink`: the sampler speaks the ST-Link's own commands to `mcuprof vprobe
--stlink-port --latency 1ms` (stlink-server's protocol, 1 ms a USB command as an ST-Link/V2 on
full-speed USB costs), with no OpenOCD in between; QEMU runs mixed_forever_m4 at uniform cost
with the truth plugin.

Checked, PC-only, with --stacks and DWT_PCSR (--mode pcsr), each ended by --samples:
- the cost: the recording's own count of USB commands a sample is at most 4 (5 with --stacks),
  and the vprobe's count for the recording's connection (printed per connection as it exits)
  is that count plus a setup of a few dozen commands (connect, firmware check, the end), never
  fewer: the two counters agree;
- the shares: every function of 5 % or more within 4 standard errors of the time census of the
  recording's own window, held between the census and the census less its stalls
  (fwtest.beyond_se's stall_free), as every halting path through the rig is; DWT_PCSR's
  shares within 4 of the report's own burst standard errors, every function of 1 % or more
  (openocd_record_suite.pcsr_profile_checks, the bound of the OpenOCD PCSR tests);
- DWT_PCSR's cost: one READMEM_32BIT_NO_ADDR_INC a batch, so the recording's count is the
  number of batches (its samples over --batch, rounded up) and its summary prints that over
  the samples; no read found the core halted; the batches are the report's bursts;
- the core left running: DHCSR read through the server after each recording (S_HALT clear),
  the guest running as the vprobe leaves.

And `top --stlink` once on the same rig (halting, ended by --samples): its last table is its
samples file's profile, and that profile holds as the recordings' do.

And the faults: a part that does not allow halting debug (vprobe --no-halt): the recording's
first halt does not take, one line says why, exit code 2, the core runs on, and --mode pcsr
still samples it. The server gone in the middle of a --stacks recording (the vprobe killed): the
recording ends by itself with exit code 3 and one line saying the link was lost, and every
sample it said it recorded is in its file. And another program on the probe: a client of the
server opens the device in the middle of a halting recording; the recording pauses (no sample,
no halt) while it has the probe open, the client's halt stands, and sampling goes on once it
closes; a client that halts the core and leaves it halted ends the recording, the core left so.

A TCP client that never opens the device stays connected meanwhile, so that the vprobe, which
ends when its last client goes, serves every recording; DHCSR is read between them by a raw
stlink-server client (test_stlink_clients.RawStlinkClient) of its own each time.
Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
from pathlib import Path

import openocd_record_suite as suite
import qemu_runner
from openocd_rig import CLI, ELF, UNIFORM_COST_NS, guest_running, guest_runs, require, stop_process
from spawn import spawn
from test_stlink_clients import RawStlinkClient

DHCSR = 0xE000EDF0
S_HALT = 1 << 17
SAMPLES = 200
# Connecting, the firmware check, the vprobe signature, the start and the end: what the vprobe
# counts of a recording's connection beyond its samples (measured: a few dozen).
SETUP_COMMANDS = 100
# name: the options, the samples, and the most USB commands a halting sample may take (None:
# DWT_PCSR batches, one command each).
RUNS = {"pc": ((*suite.HALT_INTERVAL,), SAMPLES, 4.0),
        "stacks": (("--stacks", *suite.HALT_INTERVAL), SAMPLES, 5.0),
        "pcsr": (("--mode", "pcsr", "--batch", str(suite.PCSR_BATCH), *suite.PCSR_INTERVAL), suite.SAMPLES["pcsr"],
                 None)}


def start_stlink_vprobe(gdb_port: int, *options: str):
    """`mcuprof vprobe --stlink-port 0 --latency 1ms` (and `options`) in front of QEMU's gdbstub: the
    process, the stlink-server port it chose and its first stderr line (the caller reads the rest)."""
    vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{gdb_port}", "--stlink-port", "0", "--latency", "1ms",
                    *options],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = vprobe.stderr.readline()
    match = re.search(r"st-link on 127\.0\.0\.1:(\d+)", first)
    if not match:
        stop_process(vprobe)
        raise AssertionError(f"vprobe did not start: {first!r}")
    return vprobe, int(match.group(1)), first


def stop_stlink_rig(rig) -> None:
    """Stops what a rig (its attributes raw, vprobe, qemu, each possibly None, and work) started:
    the raw client closed, the vprobe and QEMU stopped, the work folder removed."""
    if rig.raw is not None:
        try:
            rig.raw.close()
        except (OSError, AssertionError):
            pass
    if getattr(rig, "keep", None) is not None:
        rig.keep.close()
    stop_process(rig.vprobe)
    if rig.qemu is not None:
        rig.qemu.stop()
    shutil.rmtree(rig.work, ignore_errors=True)


class KeepAlive:
    """A TCP client of the stlink-server that never opens the device."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    def close(self) -> None:
        self.sock.close()


def read_dhcsr(raw: RawStlinkClient) -> int:
    """READDEBUGREG (0xF2 0x36): the status word, then the value."""
    reply = raw.usb(struct.pack("<BBI", 0xF2, 0x36, DHCSR), 8)
    assert reply[0] == 0x80, f"READDEBUGREG status {reply[0]:#x}"
    return struct.unpack_from("<I", reply, 4)[0]


def read_dhcsr_alone(port: int, connections: list[int] | None = None) -> int:
    """DHCSR through a raw client of its own, opened and closed at once (its connection id
    added to `connections`)."""
    raw = RawStlinkClient(port)
    try:
        if connections is not None:
            connections.append(raw.connection)
        return read_dhcsr(raw)
    finally:
        raw.close()


class RecordThroughStlinkCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(("arm-none-eabi-nm",), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-direct-"))
        cls.qemu = cls.vprobe = cls.raw = None
        cls.vprobe_log = []
        try:
            cls._run()
        finally:
            cls._stop()

    @classmethod
    def _run(cls):
        cls.qemu = qemu_runner.QemuRun(ELF, gdb=True, halted=True, qmp=True, truth=cls.work / "truth.txt",
                                       uniform_cost_ns=UNIFORM_COST_NS, icount_shift=0, uart=None,
                                       timeout=600).start()
        cls.vprobe, port, first = start_stlink_vprobe(cls.qemu.gdb_port)
        cls.vprobe_log.append(first)
        reader = threading.Thread(target=lambda: cls.vprobe_log.extend(cls.vprobe.stderr), daemon=True)
        reader.start()
        # Connected, the device not opened: it keeps the vprobe serving between recordings and
        # is no program sharing the probe (a halting recording pauses beside one).
        cls.raw = KeepAlive(port)
        cls.raw_connections = []
        cls.results, cls.windows, cls.stall_free, cls.dhcsr = {}, {}, {}, {}
        for name, (options, samples, _) in RUNS.items():
            rec = cls.work / f"{name}.rec"
            command = [str(CLI), "record", "--stlink", f"127.0.0.1:{port}", *options, "--samples", str(samples),
                       "--elf", str(ELF), "-o", str(rec), "--format", "json"]
            cls.results[name], cls.windows[name], cls.stall_free[name] = suite.windowed(cls, command, timeout=600)
            cls.dhcsr[name] = cls.read_dhcsr_alone(port)
            print(f"\nrecord --stlink {' '.join(options)}: {cls.results[name].stderr.strip().splitlines()[-1:]}",
                  file=sys.stderr)
        # top through the same server (the record command's sources, a fourth connection): plain tables.
        top_rec = cls.work / "top.rec"
        cls.top, cls.windows["top"], cls.stall_free["top"] = suite.windowed(
            cls, [str(CLI), "top", "--stlink", f"127.0.0.1:{port}", "--samples", str(SAMPLES), *suite.HALT_INTERVAL,
                  "--refresh", "200ms", "--rows", "0", "--elf", str(ELF), "-o", str(top_rec)], timeout=600)
        cls.dhcsr["top"] = cls.read_dhcsr_alone(port)
        cls.top_report = suite.report_json(top_rec) if cls.top.returncode == 0 else None
        cls.raw.close()
        cls.raw = None
        cls.vprobe_code = cls.vprobe.wait(timeout=30)
        reader.join(timeout=5)
        cls.guest_running = guest_running(cls.qemu)
        cls.qemu.stop()

    @classmethod
    def _stop(cls):
        stop_stlink_rig(cls)

    @classmethod
    def read_dhcsr_alone(cls, port: int) -> int:
        return read_dhcsr_alone(port, cls.raw_connections)

    def connection_counts(self) -> dict[int, int]:
        log = "".join(self.vprobe_log)
        by_connection = re.search(r"USB commands by connection: (.*)", log)
        self.assertIsNotNone(by_connection, log)
        return {int(k): int(v) for k, v in re.findall(r"connection (\d+): (\d+)", by_connection.group(1))}

    def report(self, name: str) -> dict:
        r = self.results[name]
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_commands_per_sample(self):
        counts = self.connection_counts()
        # Each recording opened a connection of its own, top the last; between them the raw
        # reads of DHCSR opened theirs.
        recorded = [counts[c] for c in sorted(counts) if c not in self.raw_connections]
        self.assertEqual(len(recorded), len(RUNS) + 1, counts)
        for (name, (_, samples, bound)), vprobe_count in zip(RUNS.items(), recorded):
            with self.subTest(run=name):
                figures = self.report(name)["sampler"]["probe_commands"]
                if bound is None:
                    self.assertEqual(figures["commands"], math.ceil(samples / suite.PCSR_BATCH), figures)
                else:
                    self.assertLessEqual(figures["per_sample"], bound, figures)
                self.assertAlmostEqual(figures["per_sample"], figures["commands"] / samples, places=6)
                self.assertIn(f"{figures['per_sample']:.2f} USB commands a sample", self.results[name].stderr)
                setup = vprobe_count - figures["commands"]
                self.assertGreaterEqual(setup, 0, (vprobe_count, figures))
                self.assertLessEqual(setup, SETUP_COMMANDS, (vprobe_count, figures))
                print(f"\n--stlink {name}: {figures['per_sample']:.3f} USB commands a sample "
                      f"(vprobe: {vprobe_count} for {samples} samples, {setup} of them setup)", file=sys.stderr)

    def test_shares_within_the_window(self):
        for name, (_, samples, bound) in RUNS.items():
            with self.subTest(run=name):
                report = self.report(name)
                observed = suite.observed_shares(self, report, samples, self.windows[name])
                if bound is None:
                    suite.pcsr_profile_checks(self, report, samples, suite.PCSR_BATCH, self.windows[name],
                                              self.stall_free[name])
                else:
                    suite.halt_profile_checks(self, observed, self.windows[name], samples, self.stall_free[name])

    def test_pcsr_batches_never_halt(self):
        # DWT_PCSR is read while the core runs: the summary tells batches, not halts; no read
        # found the core halted (nobody else halted it), every read is a sample.
        samples = RUNS["pcsr"][1]
        self.assertIn(f"DWT_PCSR read {suite.PCSR_BATCH} times per round trip", self.results["pcsr"].stderr)
        sampler = self.report("pcsr")["sampler"]
        self.assertNotIn("halt_latency_us", sampler)
        self.assertEqual(sampler["pcsr"]["halted_reads"], 0)
        self.assertEqual(sampler["pcsr"]["reads"], samples)
        self.assertEqual(sampler["pcsr"]["batches"], math.ceil(samples / suite.PCSR_BATCH))

    def test_top_through_the_stlink(self):
        # top's last table is its samples file's profile (the shares report prints, to the 0.1 top
        # shows), and that profile holds as every halting recording does. Their errors differ
        # by design: top's tally is binomial, report's takes batches of consecutive wall-clock
        # halts (docs/live.md), so only the shares are compared.
        self.assertEqual(self.top.returncode, 0, self.top.stderr)
        last = [l for l in self.top.stdout.splitlines() if l.startswith("top ")][-1]
        self.assertIn(f"(end: sample count reached): {SAMPLES} samples", last)
        shown = {}
        for line in self.top.stdout.split(last)[1].strip().splitlines()[1:]:
            pct, se, _, name = line.split(None, 3)
            shown[name] = (float(pct), float(se))
        reported = {row["name"]: (row["percent"], row["stderr"]) for row in self.top_report["functions"]}
        self.assertEqual(set(shown), {name for name, (pct, _) in reported.items() if pct > 0}, (shown, reported))
        for name, (pct, _) in shown.items():
            self.assertAlmostEqual(pct, reported[name][0], delta=0.051, msg=f"{name}: top {pct}, report {reported[name]}")
        observed = suite.observed_shares(self, self.top_report, SAMPLES, self.windows["top"])
        suite.halt_profile_checks(self, observed, self.windows["top"], SAMPLES, self.stall_free["top"])

    def test_the_virtual_probe_is_known_and_its_bias_warned_of(self):
        # The vprobe's signature reaches the header through the ST-Link's own reads too: every
        # recording warns of QEMU's wall clock, naming the ST-Link (no OpenOCD in between).
        for name in RUNS:
            with self.subTest(run=name):
                self.assertIn("mcuprof record: warning: the ST-Link is mcuprof's virtual probe", self.results[name].stderr)
                self.assertIn("emulator-bias", [w["kind"] for w in self.report(name)["warnings"]])

    def test_stacks_unwound(self):
        doc = self.report("stacks")
        self.assertIn("stacks", doc["sampler"])
        self.assertGreater(doc["sampler"]["stacks"]["mean_depth"], 0.5, doc["sampler"]["stacks"])

    def test_core_left_running(self):
        for name, dhcsr in self.dhcsr.items():
            with self.subTest(run=name):
                self.assertFalse(dhcsr & S_HALT, f"DHCSR {dhcsr:#010x} after --stlink {name}")
        self.assertEqual(self.vprobe_code, 0, "".join(self.vprobe_log))
        self.assertTrue(self.guest_running, "the guest is not running after the recordings")


@contextlib.contextmanager
def fault_rig(prefix: str, *vprobe_options: str):
    """A rig of its own for one fault: QEMU running ELF, the vprobe (start_stlink_vprobe with
    `vprobe_options`, its stderr drained), a TCP client of its server that never opens the device (it keeps the vprobe
    serving between recordings, and shares no probe), a work folder;
    yielded as one object (qemu, vprobe, port, raw, work, and `record`, a recording the test may
    start); every process stopped and the folder removed afterwards, on every path."""
    require(("arm-none-eabi-nm",), (CLI, ELF))
    rig = types.SimpleNamespace(qemu=None, vprobe=None, port=None, raw=None, keep=None, record=None,
                                work=Path(tempfile.mkdtemp(prefix=prefix)))
    try:
        rig.qemu = qemu_runner.QemuRun(ELF, gdb=True, halted=True, qmp=True, uart=None, timeout=300).start()
        rig.vprobe, rig.port, _ = start_stlink_vprobe(rig.qemu.gdb_port, *vprobe_options)
        threading.Thread(target=lambda: rig.vprobe.stderr.read(), daemon=True).start()
        rig.keep = KeepAlive(rig.port)
        yield rig
    finally:
        if rig.record is not None and rig.record.poll() is None:
            rig.record.kill()
            rig.record.communicate()
        stop_stlink_rig(rig)


def spawn_record(rig, *options: str, rec: Path):
    """record --stlink on the rig's server, until killed or ended (--samples 10000000)."""
    rig.record = spawn([str(CLI), "record", "--stlink", f"127.0.0.1:{rig.port}", *options, "--samples", "10000000",
                        "--elf", str(ELF), "-o", str(rec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return rig.record


class FaultsMidRun(unittest.TestCase):
    def test_another_program_on_the_probe_pauses_the_halts(self):
        # A client that opens the probe in the middle of a halting recording (a debugger through
        # the same stlink-server) pauses it: no sample, no halt while it has the probe open,
        # said on stderr as it happens; the client halts the core and it stays halted (nothing
        # of the recording's resumes it); it resumes the core and closes: sampling goes on.
        # Then a client halts the core and closes without resuming it: the next sample finds
        # it halted, leaves it so (DHCSR still S_HALT) and ends the recording.
        with fault_rig("mcuprof-record-stlink-other-") as rig:
            rec = rig.work / "other.rec"
            record = spawn_record(rig, rec=rec)
            said = []
            threading.Thread(target=lambda: said.extend(record.stderr), daemon=True).start()
            suite.wait_for_samples(record, rec, 20)

            def wait_said(text: str, times: int = 1) -> None:
                deadline = time.monotonic() + 60
                while sum(text in line for line in said) < times:
                    self.assertIsNone(record.poll(), "".join(said))
                    self.assertLess(time.monotonic(), deadline, f"no {text!r} on stderr: {''.join(said)}")
                    time.sleep(0.05)

            rig.raw = RawStlinkClient(rig.port)
            wait_said("sampling paused")
            self.assertIn("1 other program has the ST-Link open", "".join(said))
            paused_at = suite.samples_in(rec)   # the notice flushed every sample before it
            rig.raw.write_debug_register(DHCSR, 0xA05F0000 | 0b11)   # DBGKEY | C_HALT | C_DEBUGEN
            pc = rig.raw.read_all_registers()[15]
            time.sleep(1.0)
            self.assertTrue(read_dhcsr(rig.raw) & S_HALT, "the other program's halt was undone")
            self.assertEqual(rig.raw.read_all_registers()[15], pc, "the core ran while the other program held it")
            self.assertEqual(suite.samples_in(rec), paused_at, "samples taken while another program had the probe")
            rig.raw.write_debug_register(DHCSR, 0xA05F0000 | 0b01)
            rig.raw.close()
            rig.raw = None
            suite.wait_for_samples(record, rec, paused_at + 20)
            wait_said("sampling again")

            other = RawStlinkClient(rig.port)
            wait_said("sampling paused", times=2)
            other.write_debug_register(DHCSR, 0xA05F0000 | 0b11)
            other.close()
            out, err = record.communicate(timeout=120)
            err = "".join(said) + err
            self.assertEqual(record.returncode, 0, err)
            self.assertEqual(err.count("sampling paused"), 2, err)
            self.assertIn("the core was found halted by someone else", err)
            rig.raw = RawStlinkClient(rig.port)
            self.assertTrue(read_dhcsr(rig.raw) & S_HALT, "the other program's halt was undone")
            rig.raw.write_debug_register(DHCSR, 0xA05F0000 | 0b01)
            self.assertFalse(read_dhcsr(rig.raw) & S_HALT)

    def test_a_core_that_will_not_halt(self):
        # A part that does not allow halting debug (vprobe --no-halt: C_DEBUGEN RAZ/WI): the
        # first sample's halt does not take, so the recording ends with one line saying why and
        # exit code 2 (nothing recorded), the core running as it was; DWT_PCSR, which needs no
        # halt, still samples it.
        with fault_rig("mcuprof-record-stlink-nohalt-", "--no-halt") as rig:
            server = ("--stlink", f"127.0.0.1:{rig.port}", "--elf", str(ELF))
            r = subprocess.run([str(CLI), "record", *server, "--samples", "10", "-o", str(rig.work / "nohalt.rec")],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 2, r.stderr)
            last = r.stderr.strip().splitlines()[-1]
            self.assertTrue(last.startswith("mcuprof record: "), last)
            self.assertIn("the core did not halt", last)
            self.assertIn("C_DEBUGEN reads 0, so this part does not allow halting debug", last)
            self.assertFalse(read_dhcsr_alone(rig.port) & S_HALT)
            self.assertTrue(guest_runs(rig.qemu), "the guest is not running after the refused halt")
            p = subprocess.run([str(CLI), "record", *server, "--mode", "pcsr", "--samples", "32",
                                "-o", str(rig.work / "pcsr.rec")], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(suite.report_json(rig.work / "pcsr.rec")["samples"], 32)

    def test_samples_kept_link_lost_exit_3(self):
        with fault_rig("mcuprof-record-stlink-gone-") as rig:
            rec = rig.work / "gone.rec"
            record = spawn_record(rig, "--stacks", rec=rec)
            suite.wait_for_samples(record, rec, 20)
            rig.vprobe.kill()
            rig.vprobe.wait(timeout=10)
            out, err = record.communicate(timeout=120)
            self.assertEqual(record.returncode, 3, err)
            self.assertIn("mcuprof record: stopped early, the link was lost: stlink-server", err)
            said = int(re.search(r"the (\d+) samples recorded are in", err).group(1))
            self.assertGreaterEqual(said, 20)
            self.assertEqual(suite.report_json(rec)["samples"], said)


if __name__ == "__main__":
    unittest.main()
