"""mcuprof beside a debugger on one ST-Link (issue 51), as STM32CubeIDE's debugger and a sampler
would share one probe through ST's stlink-server: QEMU runs the never-ending reference image
behind `mcuprof vprobe --stlink-port --latency 1ms`; the debugger is the real gdb
(gdb-multiarch) through the real OpenOCD 0.12 (`st-link backend tcp`, hla_swd: OpenOCD's
default for an ST-Link) on the same server as `mcuprof record --stlink`.

While mcuprof records, gdb attaches (OpenOCD halts the core), reads the registers, waits a
second, reads them again, single-steps three instructions and reads the debug registers, then
resumes the core (`monitor resume`: OpenOCD's stock scripts leave it halted at a detach) and
detaches. What a debugger needs of the probe's other user holds:

- DWT_PCSR sampling (`--mode pcsr`, until stopped by SIGINT after the session and 500 more
  samples) goes on the whole time and never resumes the core gdb
  halted: the PC gdb reads a second apart is the same and DHCSR.S_HALT stays set, each stepi
  moves the PC to the next instruction gdb's own disassembly gives (or a branch's target,
  which is then outside the straight line), and the recording counts the reads that found the
  core halted (0xFFFFFFFF, dropped), then samples the running core again after the detach.
- Halting sampling (`--mode halt`) pauses from its first sample, since OpenOCD has the probe
  open (the server's GET_NB_OF_DEV_CLIENTS): no sample and no halt while OpenOCD is there,
  said on stderr; gdb's session is as undisturbed as above; once OpenOCD shuts down, sampling
  goes on to the sample count, said too.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import re
import signal
import subprocess
import tempfile
import threading
import time
import types
import unittest
from pathlib import Path

import openocd_record_suite as suite
import qemu_runner
from openocd_rig import CLI, ELF, OPENOCD, STLINK_CONFIG, TclRpc, guest_runs, require, stop_process, wait_port
from spawn import spawn
from test_record_stlink_direct import KeepAlive, start_stlink_vprobe, stop_stlink_rig

GDB = "gdb-multiarch"
S_HALT = 1 << 17
STEPS = 3


def gdb_session(gdb_port: int) -> str:
    """gdb's whole session against OpenOCD's GDB port, its output. Each value printed on a line
    of its own with a tag ("pc-before 0x..."), each stepi preceded by the instruction after the
    current one as gdb disassembles it."""
    commands = ["set pagination off", "set confirm off", f"file {ELF}",
                f"target extended-remote 127.0.0.1:{gdb_port}", "monitor halt",
                "maintenance flush register-cache",
                'printf "pc-before 0x%x\\n", $pc', "shell sleep 1", "maintenance flush register-cache",
                'printf "pc-after-wait 0x%x\\n", $pc', "monitor mdw 0xE000EDF0"]
    for _ in range(STEPS):
        commands += ["x/2i $pc", "stepi", 'printf "pc-stepped 0x%x\\n", $pc']
    # OpenOCD leaves the core halted at a detach (no gdb-detach event in its stock scripts):
    # resumed first, as a user would.
    commands += ["info registers", "monitor mdw 0xE000EDF0", "monitor resume", "detach"]
    args = [GDB, "-nx", "-batch"]
    for c in commands:
        args += ["-ex", c]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return r.stdout + r.stderr


class BesideGdbThroughOpenOCD(unittest.TestCase):
    def setUp(self):
        require((OPENOCD, GDB, "arm-none-eabi-nm"), (CLI, ELF))
        self.rig = types.SimpleNamespace(qemu=None, vprobe=None, raw=None, keep=None,
                                         work=Path(tempfile.mkdtemp(prefix="mcuprof-beside-gdb-")))
        self.openocd = self.record = None
        self.openocd_log = None
        self.rig.qemu = qemu_runner.QemuRun(ELF, gdb=True, halted=True, qmp=True, uart=None, timeout=300).start()
        self.rig.vprobe, self.port, _ = start_stlink_vprobe(self.rig.qemu.gdb_port)
        threading.Thread(target=lambda: self.rig.vprobe.stderr.read(), daemon=True).start()
        self.rig.keep = KeepAlive(self.port)   # the vprobe serves until its last client goes

    def tearDown(self):
        if self.record is not None and self.record.poll() is None:
            self.record.kill()
            self.record.communicate()
        stop_process(self.openocd)
        if self.openocd_log:
            self.openocd_log.close()
        stop_stlink_rig(self.rig)

    def start_openocd(self) -> int:
        """The debugger's OpenOCD on the vprobe's stlink-server: its GDB port."""
        gdb_port, tcl_port = qemu_runner.free_port(), qemu_runner.free_port()
        self.openocd_log = open(self.rig.work / "openocd.log", "w")
        self.openocd = spawn(
            [OPENOCD, "-f", str(STLINK_CONFIG), "-c", f"hla_stlink_backend tcp {self.port}",
             "-c", f"gdb_port {gdb_port}", "-c", "telnet_port disabled", "-c", f"tcl_port {tcl_port}",
             "-c", "init"],
            stdin=subprocess.DEVNULL, stdout=self.openocd_log, stderr=subprocess.STDOUT, cwd=self.rig.work)
        wait_port(gdb_port, self.openocd, "openocd's gdb port")
        self.tcl_port = tcl_port
        return gdb_port

    def stop_openocd(self) -> None:
        tcl = TclRpc(self.tcl_port)
        try:
            tcl.raw("shutdown")
        except OSError:
            pass   # it may close before it answers
        tcl.close()
        self.assertEqual(self.openocd.wait(timeout=30), 0, (self.rig.work / "openocd.log").read_text())

    def spawn_record(self, rec: Path, *options: str):
        self.record = spawn([str(CLI), "record", "--stlink", f"127.0.0.1:{self.port}", *options,
                             "--elf", str(ELF), "-o", str(rec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.said = []
        threading.Thread(target=lambda: self.said.extend(self.record.stderr), daemon=True).start()
        return self.record

    def wait_said(self, text: str) -> None:
        deadline = time.monotonic() + 60
        while not any(text in line for line in self.said):
            self.assertIsNone(self.record.poll(), "".join(self.said))
            self.assertLess(time.monotonic(), deadline, f"no {text!r} on stderr: {''.join(self.said)}")
            time.sleep(0.05)

    def check_debugger_undisturbed(self, out: str) -> None:
        """gdb's halt stood a second (the same PC, S_HALT) and each stepi moved by one instruction."""
        values = dict(re.findall(r"^(pc-before|pc-after-wait) (0x[0-9a-f]+)$", out, re.M))
        self.assertIn("pc-before", values, out)
        self.assertEqual(values["pc-before"], values["pc-after-wait"], f"the core ran while gdb held it:\n{out}")
        dhcsr = [int(v, 16) for v in re.findall(r"0xe000edf0: ([0-9a-f]{8})", out)]
        self.assertEqual(len(dhcsr), 2, out)
        for value in dhcsr:
            self.assertTrue(value & S_HALT, f"DHCSR {value:#010x} while gdb had the core halted:\n{out}")
        # x/2i's second line is the next instruction's address; the PC after stepi is that one,
        # or a branch's target (the current instruction a b/bl/bx/pop/cbz... then).
        current = int(values["pc-before"], 16)
        stepped = [int(v, 16) for v in re.findall(r"^pc-stepped (0x[0-9a-f]+)$", out, re.M)]
        shown = re.findall(r"^=> (0x[0-9a-f]+) <[^>]*>:\s*(\S+).*\n\s+(0x[0-9a-f]+) <", out, re.M)
        self.assertEqual(len(stepped), STEPS, out)
        self.assertEqual(len(shown), STEPS, out)
        for pc, (at, mnemonic, following) in zip(stepped, shown):
            self.assertEqual(int(at, 16), current, out)
            if pc != int(following, 16):
                self.assertRegex(mnemonic, r"^(b|cb|tb|pop|ldm|ldr|mov|add|sub)",
                                 f"stepi from {current:#x} ({mnemonic}) landed at {pc:#x}:\n{out}")
            current = pc
        self.assertIn("(Remote target) detached]", out)

    def test_pcsr_samples_beside_gdb_and_never_resumes_its_halt(self):
        gdb_port = self.start_openocd()
        rec = self.rig.work / "pcsr.rec"
        # Until stopped: the recording spans gdb's session however fast or slow the host is.
        self.spawn_record(rec, "--mode", "pcsr", "--batch", "16", "--samples", "100000000")
        suite.wait_for_samples(self.record, rec, 100)
        out = gdb_session(gdb_port)
        self.check_debugger_undisturbed(out)
        after = suite.samples_in(rec)
        suite.wait_for_samples(self.record, rec, after + 500)   # the running core sampled again
        self.record.send_signal(signal.SIGINT)
        _, err = self.record.communicate(timeout=300)
        err = "".join(self.said) + err
        self.assertEqual(self.record.returncode, 0, err)
        self.assertIn("interrupted by a signal", err)
        sampler = suite.report_json(rec)["sampler"]
        # A second and more of gdb's halt: 16 reads a USB command at 1 ms a command at most,
        # hundreds found it halted.
        self.assertGreater(sampler["pcsr"]["halted_reads"], 100, sampler["pcsr"])
        self.assertNotIn("resumed", err)
        self.assertTrue(guest_runs(self.rig.qemu), "the guest is not running after gdb detached")
        self.stop_openocd()

    def test_halting_pauses_while_the_debugger_has_the_probe(self):
        gdb_port = self.start_openocd()
        rec = self.rig.work / "halt.rec"
        samples = 100
        self.spawn_record(rec, "--samples", str(samples), *suite.HALT_INTERVAL)
        self.wait_said("sampling paused")
        self.assertIn("1 other program has the ST-Link open", "".join(self.said))
        out = gdb_session(gdb_port)
        self.check_debugger_undisturbed(out)
        self.assertEqual(suite.samples_in(rec), 0, "samples taken while OpenOCD had the probe open")
        self.stop_openocd()
        _, err = self.record.communicate(timeout=300)
        err = "".join(self.said) + err
        self.assertEqual(self.record.returncode, 0, err)
        self.assertIn("sampling again", err)
        report = suite.report_json(rec)
        self.assertEqual(report["samples"], samples, err)
        figures = report["sampler"]["probe_commands"]
        self.assertLessEqual(figures["per_sample"], 4.0, figures)   # nothing sent while paused
        self.assertTrue(guest_runs(self.rig.qemu), "the guest is not running after the recording")


if __name__ == "__main__":
    unittest.main()
