"""The virtual probe as an ST-Link: QEMU runs the reference firmware, `mcuprof vprobe
--stlink-port` serves the stlink-server protocol in front of its gdbstub, and the real OpenOCD
(0.12, configs/openocd/qemu-stlink.cfg: its st-link driver with the TCP backend, the target
part of the real STM32F4 boards) debugs it over SWD, once through the probe's DAP commands
(dapdirect_swd) and once through its high-level commands (hla_swd).

Every check of the JTAG rig (tests/pylib/vprobe_suite.py) runs again on each transport: examine,
halt, reg, step, resume, mdw/read_memory against the ELF image, a hardware breakpoint,
`reset halt` at the reset vector, `profile` with mcuprof's report of its gmon.out,
gdb-multiarch through OpenOCD's GDB port, mcuprof's Tcl client, and `shutdown` leaving the
guest running. Only the first test differs: what OpenOCD says of the probe and the core.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import shutil
import subprocess
import unittest

import vprobe_suite  # as a module: its classes are not collected here
from openocd_rig import CLI, OPENOCD, REPO


class StlinkRig:
    def test_1_examined_as_cortex_m4_running(self):
        self.assertEqual(self.state(), "running")
        log = (self.work / "openocd.log").read_text()
        # The probe as OpenOCD's stlink_usb_version and stlink_usb_check_voltage report it.
        self.assertIn("stlink-server API v2", log)
        self.assertRegex(log, r"STLINK V3J7\S* \(API v3\) VID:PID 0483:374E")
        self.assertRegex(log, r"Target voltage: 3\.3")
        self.assertIn("Cortex-M4 r0p0 processor detected", log)
        self.assertIn("target has 6 breakpoints, 4 watchpoints", log)
        self.assertNotIn("Error", log)


class StlinkDapDirect(StlinkRig, vprobe_suite.VprobeWithOpenOCD):
    """dapdirect_swd: OpenOCD's own ADIv5 code over the probe's DAP register and memory commands."""
    stlink_transport = "dapdirect_swd"

    def test_1_examined_as_cortex_m4_running(self):
        super().test_1_examined_as_cortex_m4_running()
        self.assertIn("SWD DPIDR 0x2ba01477", (self.work / "openocd.log").read_text())


class StlinkHla(StlinkRig, vprobe_suite.VprobeWithOpenOCD):
    """hla_swd: run control, registers and memory through the probe's high-level commands."""
    stlink_transport = "hla_swd"

    def test_8_mcuprof_tcl_client_against_this_openocd(self):
        # That unit test case expects the message OpenOCD's ADIv5 code logs for a failed read
        # ("Failed to read memory at ..."); under hla OpenOCD fails the same `mdw` without a
        # message. It runs against the dapdirect_swd rig above.
        self.skipTest("its failed-read message comes from OpenOCD's ADIv5 code, not used by hla_swd")


class StlinkConfigs(unittest.TestCase):
    """qemu-stlink.cfg and stm32f4-stlink.cfg parse in OpenOCD 0.12 with either transport and
    mean the same target (the shared stm32f4-sampling.cfg): adapter, transport and target
    names, without a probe (`shutdown` before `init`)."""

    def test_both_files_both_transports(self):
        if shutil.which(OPENOCD) is None:
            self.skipTest("no openocd")
        probe = 'echo "CHECK [adapter name] [transport select] [target names]"; shutdown'
        for name in ("qemu-stlink.cfg", "stm32f4-stlink.cfg"):
            for transport, adapter in (("hla_swd", "hla"), ("dapdirect_swd", "st-link"), (None, "hla")):
                with self.subTest(config=name, transport=transport):
                    preset = ["-c", f"set STLINK_TRANSPORT {transport}"] if transport else []
                    r = subprocess.run([OPENOCD, *preset, "-f", str(REPO / "configs" / "openocd" / name),
                                        "-c", probe], capture_output=True, text=True, timeout=30)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    check = next(line for line in r.stderr.splitlines() if line.startswith("CHECK"))
                    self.assertEqual(check.split()[1:], [adapter, transport or "hla_swd", "stm32f4x.cpu"])


class StlinkCommandLine(unittest.TestCase):
    def run_vprobe(self, *args):
        return subprocess.run([str(CLI), "vprobe", *args], capture_output=True, text=True, timeout=30)

    def test_one_front_end_and_a_bounded_latency(self):
        if not CLI.is_file():
            self.skipTest(f"{CLI} is missing")
        for args, message in (
                (("--gdb", "127.0.0.1:1", "--port", "0", "--stlink-port", "0"), "one of --port N"),
                (("--gdb", "127.0.0.1:1"), "one of --port N"),
                (("--gdb", "127.0.0.1:1", "--stlink-port", "70000"), "--stlink-port takes 0 to 65535"),
                (("--gdb", "127.0.0.1:1", "--stlink-port", "0", "--latency", "1"), "--latency needs a unit"),
                (("--gdb", "127.0.0.1:1", "--stlink-port", "0", "--latency", "1s"), "--latency is at most 100ms")):
            with self.subTest(args=args):
                r = self.run_vprobe(*args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
