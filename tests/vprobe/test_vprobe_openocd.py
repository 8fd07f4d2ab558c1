"""The virtual probe end to end: QEMU runs the reference firmware, `mcuprof vprobe` serves
remote_bitbang in front of its gdbstub, and the real OpenOCD (0.12, configs/openocd/
qemu-vprobe.cfg) debugs it as a Cortex-M4 on a JTAG probe. Every answer is checked against
the ELF: the PC after a halt lies in one of its functions, memory equals its image, a
breakpoint stops at its function, `reset halt` stops at its reset vector, and OpenOCD's own
`profile` (DWT_PCSR sampling) puts every sample inside its text.

Ports are chosen at run time; every process started here is stopped on every path.

Environment (set by tests/vprobe/CMakeLists.txt under ctest):
  MCUPROF_CLI, MCUPROF_FW_DIR   the mcuprof executable and the reference ELFs
  MCUPROF_OPENOCD               the openocd executable (default: openocd on PATH)
  MCUPROF_UNIT_TESTS            the unit-test executable (its Tcl client case runs against this OpenOCD)
"""
from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import time
import unittest

import qemu_runner
from openocd_rig import (CLI, CONFIG, ELF, FW_DIR, OPENOCD, STRICT, TclRpc, guest_running, require, stop_process,
                         wait_port)
from spawn import spawn
from vprobe_suite import VprobeWithOpenOCD  # noqa: F401  (its checks run here, on the JTAG rig)


class VprobeCommandLine(unittest.TestCase):
    """How the command starts and ends: signals, a client that leaves, wrong arguments."""

    def setUp(self):
        for path in (CLI, ELF):
            if not path.is_file():
                if STRICT:
                    raise AssertionError(f"{path} is missing (make build)")
                self.skipTest(f"{path} is missing (make build)")

    def start(self, gdb_port: int) -> tuple[subprocess.Popen, int]:
        vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{gdb_port}", "--port", "0"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
        self.addCleanup(vprobe.stderr.close)
        self.addCleanup(stop_process, vprobe)
        match = re.search(r":(\d+),", vprobe.stderr.readline())
        self.assertIsNotNone(match)
        return vprobe, int(match.group(1))

    def test_signals_and_disconnect_end_it_and_leave_the_target_running(self):
        with qemu_runner.QemuRun(ELF, gdb=True, halted=True, qmp=True, uart=None, timeout=120) as q:
            for how in ("SIGINT", "SIGTERM", "disconnect"):
                with self.subTest(how=how):
                    vprobe, port = self.start(q.gdb_port)
                    if how == "disconnect":
                        with socket.create_connection(("127.0.0.1", port)) as client:
                            client.sendall(b"0R4")
                            self.assertIn(client.recv(1), (b"0", b"1"))
                    else:
                        time.sleep(0.1)
                        vprobe.send_signal(getattr(signal, how))
                    _, err = vprobe.communicate(timeout=10)
                    self.assertEqual(vprobe.returncode, 0, err)
                    self.assertIn("OpenOCD disconnected" if how == "disconnect" else "stopped after", err)
                    self.assertIn("target detached, running", err)
                    self.assertTrue(guest_running(q), "the guest is not running after vprobe")

    def test_a_target_that_exits_is_a_dead_board_for_openocd(self):
        require((OPENOCD,), ())
        # A finite image, single-stepped so that its run (1.3e8 instructions, about 15 s
        # here) outlasts OpenOCD's init by far on any machine; then it exits by semihosting.
        elf = FW_DIR / "loops_jit_m4.elf"
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, singlestep=True, uart=None, timeout=900) as q:
            vprobe, port = self.start(q.gdb_port)
            lines = []
            reader = threading.Thread(target=lambda: lines.extend(vprobe.stderr), daemon=True)
            reader.start()
            tcl_port = qemu_runner.free_port()
            openocd = spawn([OPENOCD, "-f", str(CONFIG), "-c", f"remote_bitbang port {port}",
                             "-c", "gdb_port disabled", "-c", "telnet_port disabled",
                             "-c", f"tcl_port {tcl_port}", "-c", "init"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.addCleanup(stop_process, openocd)
            wait_port(tcl_port, openocd, "openocd")
            tcl = TclRpc(tcl_port)
            try:
                q.wait(timeout=900)   # the firmware's own exit, however long the run takes
                deadline = time.monotonic() + 60
                while not any("exited with code 0" in line for line in lines):
                    self.assertLess(time.monotonic(), deadline, "the vprobe did not notice the firmware's exit "
                                                                "within 60 s of it")
                    tcl.run("poll")   # OpenOCD's polls make the vprobe look at the target
                    time.sleep(0.1)
                # OpenOCD is still up; the board answers nothing.
                with self.assertRaisesRegex(AssertionError, "failed"):
                    tcl.run("mdw 0x08000000")
                tcl.raw("shutdown")
            finally:
                tcl.close()
            self.assertEqual(openocd.wait(timeout=10), 0)
            self.assertEqual(vprobe.wait(timeout=10), 2)
            reader.join(timeout=5)
            self.assertIn("the target exited with code 0 during the session", lines[-1])

    def test_wrong_arguments_exit_1_an_unreachable_target_2(self):
        def run(*args):
            return subprocess.run([str(CLI), "vprobe", *args], capture_output=True, text=True, timeout=30)

        for args in ((), ("--port", "0"), ("--gdb", "127.0.0.1:1234"), ("--gdb", "127.0.0.1:1234", "--port", "-1"),
                     ("--gdb", "127.0.0.1:1234", "--port", "70000"), ("--gdb", "127.0.0.1:1234", "--port", "x")):
            with self.subTest(args=args):
                r = run(*args)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        nobody = qemu_runner.free_port()   # nothing listens there
        r = run("--gdb", f"127.0.0.1:{nobody}", "--port", "0")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr.strip(), rf"^mcuprof vprobe: gdb 127\.0\.0\.1:{nobody}: nothing listens on "
                                           rf"127\.0\.0\.1:{nobody}: start the GDB server first")


if __name__ == "__main__":
    unittest.main(verbosity=2)
