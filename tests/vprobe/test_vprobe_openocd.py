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

import json
import os
import re
import signal
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
import qemu_runner  # noqa: E402
from elf_symbols import nm_symbols  # noqa: E402

CLI = Path(os.environ.get("MCUPROF_CLI", REPO / "build" / "mcuprof"))
FW_DIR = Path(os.environ.get("MCUPROF_FW_DIR", REPO / "build" / "firmware-ref"))
OPENOCD = os.environ.get("MCUPROF_OPENOCD", "openocd")
UNIT_TESTS = Path(os.environ.get("MCUPROF_UNIT_TESTS", REPO / "build" / "tests" / "mcuprof_tests"))
CONFIG = REPO / "configs" / "openocd" / "qemu-vprobe.cfg"
STLINK_CONFIG = REPO / "configs" / "openocd" / "qemu-stlink.cfg"
ELF = FW_DIR / "mixed_forever_m4.elf"
STRICT = bool(os.environ.get("MCUPROF_UNDER_CTEST"))


# ---------------------------------------------------------------- the ELF, read with binutils

def elf_functions(elf: Path) -> dict[str, tuple[int, int]]:
    """name -> (start, end) of every function symbol with a size (Thumb bit cleared)."""
    return {s.name: (s.start, s.start + s.size) for s in nm_symbols(elf, "Tt") if s.size > 0}


def elf_symbol(elf: Path, name: str) -> int:
    for s in nm_symbols(elf):
        if s.name == name:
            return s.address
    raise AssertionError(f"{name} not in {elf}")


def elf_flash_image(elf: Path, work: Path) -> bytes:
    """The bytes loaded at 0x08000000 (the first LOAD segment), by objcopy."""
    headers = subprocess.run(["arm-none-eabi-readelf", "-lW", str(elf)], capture_output=True, text=True,
                             check=True).stdout
    first_load = next(line.split() for line in headers.splitlines() if line.strip().startswith("LOAD"))
    assert int(first_load[2], 16) == 0x08000000, first_load
    image = work / "flash.bin"
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".vectors", "-j", ".text", "-j", ".rodata",
                    str(elf), str(image)], check=True)
    return image.read_bytes()


def read_gmon(path: Path) -> tuple[int, int, list[int]]:
    """(low_pc, high_pc, buckets) of OpenOCD's gmon.out (src/target/target.c, write_gmon):
    'gmon', version, 3 padding words, tag 0, low_pc, high_pc, bucket count, rate, the
    dimension "seconds" in 15 bytes and "s", then one 16-bit count per bucket."""
    data = path.read_bytes()
    assert data[:4] == b"gmon", data[:16]
    low, high, count, _rate = struct.unpack_from("<IIII", data, 21)
    buckets = list(struct.unpack_from(f"<{count}H", data, 53))
    return low, high, buckets


# ---------------------------------------------------------------- OpenOCD's Tcl RPC port

class TclRpc:
    """OpenOCD's Tcl server (doc: "Tcl RPC server"): a command, then 0x1a; the result, then
    0x1a. Each command runs inside `catch` and `capture`, so errors come back as text and
    printed output is part of the result."""

    # A bound for a hang. `profile 1` queues 1024-read batches whose every JTAG bit crosses the
    # vprobe's socket: one batch took over 30 s with both cores loaded four times over.
    def __init__(self, port: int, timeout: float = 600.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""

    def raw(self, script: str) -> str:
        self.sock.sendall(script.encode() + b"\x1a")
        while b"\x1a" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("OpenOCD closed its Tcl port")
            self.buffer += chunk
        reply, self.buffer = self.buffer.split(b"\x1a", 1)
        return reply.decode(errors="replace")

    def run(self, command: str) -> str:
        """The command's printed output and result; AssertionError when it failed."""
        reply = self.raw("format \"%d\\x1e%s\" [catch {capture {" + command + "}} _mcuprof_r] $_mcuprof_r")
        code, _, text = reply.partition("\x1e")
        if code != "0":
            raise AssertionError(f"openocd: {command!r} failed: {text.strip()}")
        return text

    def close(self) -> None:
        self.sock.close()


def require(tools, paths) -> None:
    """Skips the test class when a tool or a built file is missing; under ctest that is a
    failure instead (the suite must not pass by skipping)."""
    missing = [f"{t} is not installed" for t in tools if shutil.which(t) is None]
    missing += [f"{p} is missing (make build)" for p in paths if not Path(p).is_file()]
    if missing:
        if STRICT:
            raise AssertionError(missing[0])
        raise unittest.SkipTest(missing[0])


def wait_port(port: int, process: subprocess.Popen, what: str, timeout: float = 120.0) -> None:
    """Until `process` listens on `port`. OpenOCD's init through the vprobe takes about a
    second here; `timeout` is a bound for a slow, loaded machine, not an expectation."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{what} exited early ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} did not listen on port {port}")


def stop_process(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def start_rig(rig, elf: Path, *, truth: Path | None = None, singlestep: bool = False,
              vprobe_options: tuple[str, ...] = (), openocd_gdb: bool = False) -> None:
    """QEMU running `elf` (halted at first, then let run by the vprobe; -singlestep and the
    truth plugin writing `truth` when asked), `mcuprof vprobe` in front of its gdbstub, and
    OpenOCD on the vprobe, on ports chosen now. Sets on `rig` (whose `work` folder exists):
    qemu, vprobe, vprobe_log (its stderr lines, read as they come so the pipe never fills),
    vprobe_reader, bitbang_port (the probe's port, either protocol), openocd, openocd_log,
    tcl_port, gdb_port (OpenOCD's, None unless `openocd_gdb`), tcl. What started is stopped by
    stop_rig(rig), also on failure.

    The probe is remote_bitbang (JTAG, qemu-vprobe.cfg), or, when `rig.stlink_transport` is
    "dapdirect_swd" or "hla_swd", an ST-Link over SWD (vprobe --stlink-port, qemu-stlink.cfg);
    `rig.probe_link`, when set, is called with the probe's port and returns the port OpenOCD
    connects to (a proxy in between)."""
    rig.qemu = rig.vprobe = rig.openocd = rig.tcl = rig.openocd_log = None
    rig.vprobe_log = []
    stlink = getattr(rig, "stlink_transport", None)
    rig.qemu = qemu_runner.QemuRun(elf, gdb=True, halted=True, singlestep=singlestep, truth=truth, uart=None,
                                   timeout=600).start()
    rig.vprobe = subprocess.Popen([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{rig.qemu.gdb_port}",
                                   "--stlink-port" if stlink else "--port", "0", *vprobe_options],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
    first = rig.vprobe.stderr.readline()
    rig.vprobe_log.append(first)
    match = re.search(r"(?:remote_bitbang|st-link) on 127\.0\.0\.1:(\d+)", first)
    if not match:
        raise AssertionError(f"vprobe did not start: {first!r} {rig.vprobe.stderr.read()}")
    rig.bitbang_port = int(match.group(1))
    rig.vprobe_reader = threading.Thread(target=lambda: rig.vprobe_log.extend(rig.vprobe.stderr), daemon=True)
    rig.vprobe_reader.start()
    link = getattr(rig, "probe_link", None)
    probe_port = link(rig.bitbang_port) if link else rig.bitbang_port

    rig.tcl_port = qemu_runner.free_port()
    rig.gdb_port = qemu_runner.free_port() if openocd_gdb else None
    rig.openocd_log = open(rig.work / "openocd.log", "w")
    if stlink:
        backend = "st-link backend" if stlink == "dapdirect_swd" else "hla_stlink_backend"
        probe = ["-c", f"set STLINK_TRANSPORT {stlink}", "-f", str(STLINK_CONFIG),
                 "-c", f"{backend} tcp {probe_port}"]
    else:
        probe = ["-f", str(CONFIG), "-c", f"remote_bitbang port {probe_port}"]
    rig.openocd = subprocess.Popen(
        [OPENOCD, *probe,
         "-c", f"gdb_port {rig.gdb_port}" if openocd_gdb else "gdb_port disabled", "-c", "telnet_port disabled",
         "-c", f"tcl_port {rig.tcl_port}", "-c", "init"],
        stdin=subprocess.DEVNULL, stdout=rig.openocd_log, stderr=subprocess.STDOUT, cwd=rig.work)
    wait_port(rig.tcl_port, rig.openocd, "openocd")
    rig.tcl = TclRpc(rig.tcl_port)


def shut_down_openocd(rig) -> None:
    """Asks OpenOCD to shut down and waits for it and for the vprobe, which then detaches and
    leaves QEMU running (to be asked whether its guest runs, or stopped for the truth)."""
    rig.tcl.raw("shutdown")
    rig.tcl.close()
    rig.tcl = None
    rig.openocd.wait(timeout=10)
    rig.vprobe.wait(timeout=10)


def stop_rig(rig) -> None:
    """Stops what a test class started (attributes tcl, openocd, vprobe, qemu, openocd_log,
    work, each possibly None): OpenOCD asked to shut down, then waited for or killed, the
    vprobe likewise, QEMU closed, the work folder removed."""
    if getattr(rig, "tcl", None) is not None:
        try:
            rig.tcl.raw("shutdown")
        except OSError:
            pass
        rig.tcl.close()
    for process in (getattr(rig, "openocd", None), getattr(rig, "vprobe", None)):
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stop_process(process)
    if getattr(rig, "vprobe", None) is not None:
        rig.vprobe.stderr.close()
    if getattr(rig, "qemu", None) is not None:
        rig.qemu.close()
    if getattr(rig, "openocd_log", None):
        rig.openocd_log.close()
    shutil.rmtree(rig.work, ignore_errors=True)


class VprobeWithOpenOCD(unittest.TestCase):
    """One QEMU, one vprobe, one OpenOCD for the whole class; the tests run in name order."""

    @classmethod
    def setUpClass(cls):
        require((OPENOCD, "arm-none-eabi-nm", "arm-none-eabi-objcopy"), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vprobe-"))
        try:
            cls._start()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _start(cls):
        start_rig(cls, ELF, openocd_gdb=True)
        cls.functions = elf_functions(ELF)
        cls.text = (elf_symbol(ELF, "__text_start"), elf_symbol(ELF, "__text_end"))

    @classmethod
    def _stop(cls):
        stop_rig(cls)

    @classmethod
    def tearDownClass(cls):
        cls._stop()

    # ---- helpers

    def function_at(self, pc: int) -> str | None:
        for name, (start, end) in self.functions.items():
            if start <= pc < end:
                return name
        return None

    def reg(self, name: str) -> int:
        out = self.tcl.run(f"reg {name}")
        match = re.search(r":\s*(0x[0-9a-fA-F]+)", out)
        self.assertIsNotNone(match, out)
        return int(match.group(1), 16)

    def state(self) -> str:
        out = self.tcl.run("targets")
        match = re.search(r"(\S+\.cpu)\s+(?:cortex_m|hla_target)\s+little\s+\1\s+(\w+)", out)
        self.assertIsNotNone(match, out)
        return match.group(2)

    def wait_state(self, wanted: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.state() != wanted:
            if time.monotonic() > deadline:
                self.fail(f"the target did not become {wanted}")
            self.tcl.run("poll")
            time.sleep(0.05)

    # ---- the tests, in order

    def test_1_examined_as_cortex_m4_running(self):
        out = self.tcl.run("targets")
        self.assertIn("cortex_m", out)
        self.assertEqual(self.state(), "running")
        log = (self.work / "openocd.log").read_text()
        self.assertIn("tap/device found: 0x4ba00477", log)
        self.assertIn("Cortex-M4 r0p0 processor detected", log)
        self.assertIn("target has 6 breakpoints, 4 watchpoints", log)

    def test_2_halt_pc_in_a_function(self):
        self.tcl.run("halt")
        self.assertEqual(self.state(), "halted")
        pc = self.reg("pc")
        self.assertIsNotNone(self.function_at(pc), f"pc 0x{pc:08x} is in no function of {ELF.name}")
        self.assertTrue(self.reg("xPSR") & (1 << 24), "the Thumb bit")
        # A step moves on by one instruction (2 or 4 bytes) unless it branched.
        self.tcl.run("step")
        self.assertIsNotNone(self.function_at(self.reg("pc")))
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_3_memory_equals_the_elf_image(self):
        image = elf_flash_image(ELF, self.work)
        vectors = [int.from_bytes(image[i:i + 4], "little") for i in range(0, 32, 4)]
        out = self.tcl.run("mdw 0x08000000 8")
        words = [int(w, 16) for w in out.split(":", 1)[1].split()]
        self.assertEqual(words, vectors)
        # The whole image, read while the target runs and again while it is halted.
        count = len(image) // 4
        expected = [int.from_bytes(image[i:i + 4], "little") for i in range(0, 4 * count, 4)]
        timings = {}
        for when in ("running", "halted"):
            if when == "halted":
                self.tcl.run("halt")
            started = time.monotonic()
            got = [int(w, 0) for w in self.tcl.run(f"read_memory 0x08000000 32 {count}").split()]
            timings[when] = time.monotonic() - started
            self.assertEqual(got, expected, when)
        self.tcl.run("resume")
        # Speed through the whole chain (OpenOCD -> JTAG bits -> vprobe -> QEMU), for the docs.
        started = time.monotonic()
        self.tcl.run("read_memory 0x20000000 32 4096")
        seconds = time.monotonic() - started
        print(f"\nvprobe: read_memory 4096 words (SRAM, target running): {4096 / seconds:.0f} words/s; "
              f"{count} words of flash: running {count / timings['running']:.0f}, halted "
              f"{count / timings['halted']:.0f} words/s", file=sys.stderr)

    def test_4_breakpoint_stops_at_its_function(self):
        start, _ = self.functions["classify"]
        self.tcl.run(f"bp 0x{start:08x} 2 hw")
        try:
            self.wait_state("halted")
            self.assertEqual(self.reg("pc"), start)
            self.assertIn("breakpoint", self.tcl.run("poll"))
        finally:
            self.tcl.run("rbp all")
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_5_reset_halt_stops_at_the_reset_vector(self):
        image = elf_flash_image(ELF, self.work)
        reset_vector = int.from_bytes(image[4:8], "little") & ~1
        self.tcl.run("reset halt")
        self.assertEqual(self.state(), "halted")
        self.assertEqual(self.reg("pc"), reset_vector)
        self.assertEqual(self.reg("sp"), int.from_bytes(image[0:4], "little"))
        # Run to main through a breakpoint, so that the firmware is past its start-up code
        # however fast the emulator runs (the profile below must see none of it).
        main, _ = self.functions["main"]
        self.tcl.run(f"bp 0x{main:08x} 2 hw")
        try:
            self.tcl.run("resume")
            self.wait_state("halted")
            self.assertEqual(self.reg("pc"), main)
        finally:
            self.tcl.run("rbp all")
        self.tcl.run("resume")

    def test_6_profile_samples_inside_the_text(self):
        gmon = self.work / "gmon.out"
        text_start, text_end = self.text
        started = time.monotonic()
        out = self.tcl.run(f"profile 1 {gmon} 0x{text_start:x} 0x{text_end:x}")
        seconds = time.monotonic() - started
        match = re.search(r"(\d+) samples", out + (self.work / "openocd.log").read_text())
        self.assertIsNotNone(match, out)
        samples = int(match.group(1))
        low, high, buckets = read_gmon(gmon)
        self.assertEqual((low, high), (text_start, text_end))
        # With the range given, samples outside it are dropped: all of them are inside. How
        # many a second of `profile` takes depends on the machine and the probe (47 through
        # hla_swd with both cores loaded, over 1000 idle through JTAG): at least one.
        self.assertGreater(samples, 0)
        self.assertEqual(sum(buckets), samples)
        per_function: dict[str, int] = {}
        for i, n in enumerate(buckets):
            if n:
                name = self.function_at(low + 2 * i) or "?"
                per_function[name] = per_function.get(name, 0) + n
        self.assertNotIn("?", per_function)
        # mixed_forever spends its time in main's loop and its callees, not in startup.
        self.assertEqual(per_function.get("Reset_Handler", 0), 0)
        # mcuprof reads OpenOCD's gmon.out like any profile: the same samples by function.
        r = subprocess.run([str(CLI), "report", str(gmon), "--elf", str(ELF), "--format", "json"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        reported = {row["name"]: row["samples"] for row in json.loads(r.stdout)["functions"]}
        self.assertEqual({k: v for k, v in reported.items() if v}, per_function)
        print(f"\nvprobe: profile: {samples} DWT_PCSR samples in {seconds:.2f} s "
              f"({samples / seconds:.0f}/s); {per_function}", file=sys.stderr)
        self.assertEqual(self.state(), "running")

    def test_7_gdb_through_openocd_stops_at_a_software_breakpoint(self):
        # GDB's breakpoints reach OpenOCD as Z0: with no flash declared, OpenOCD writes a BKPT
        # instruction, which the vprobe turns into a breakpoint of QEMU (docs/vprobe.md).
        require(("gdb-multiarch",), ())
        gdb = shutil.which("gdb-multiarch")
        r = subprocess.run([gdb, "-batch", "-nx", str(ELF), "-ex", f"target extended-remote 127.0.0.1:{self.gdb_port}",
                            "-ex", "break classify", "-ex", "continue", "-ex", "bt", "-ex", "print/x $pc",
                            "-ex", "delete", "-ex", "detach"], capture_output=True, text=True, timeout=60)
        self.assertIn("Breakpoint 1, classify ()", r.stdout, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"#1 .* in main \(\)")
        start, _ = self.functions["classify"]
        self.assertIn(f"= 0x{start:x}", r.stdout)   # GDB puts it after the prologue; here there is none
        self.assertEqual(self.state(), "halted")     # OpenOCD 0.12 leaves it halted when GDB detaches
        self.tcl.run("resume")
        self.assertEqual(self.state(), "running")

    def test_8_mcuprof_tcl_client_against_this_openocd(self):
        # transport::TclClient's unit test that needs a real OpenOCD: quoting through Jim Tcl,
        # errors caught with `catch`, capture of printed output.
        require((), (UNIT_TESTS,))
        r = subprocess.run([str(UNIT_TESTS), "-tc=tcl client: against a real OpenOCD*"],
                           env={**os.environ, "MCUPROF_OPENOCD_TCL": f"127.0.0.1:{self.tcl_port}"},
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 passed", r.stdout)

    def test_8b_a_port_of_the_wrong_kind_is_named(self):
        # --gdb at OpenOCD's Tcl port: no GDB reply comes; --openocd at its GDB port: no Tcl
        # reply. Each is one line that says which port is which.
        def record(link: str, port: int):
            return subprocess.run([str(CLI), "record", link, f"127.0.0.1:{port}", "--samples", "10", "--elf",
                                   str(ELF), "-o", os.devnull], capture_output=True, text=True, timeout=120)

        for link, port, hint in (("--gdb", self.tcl_port, "is this OpenOCD's Tcl port (6666 by default, for --openocd)"),
                                 ("--openocd", self.gdb_port, "the server speaks the GDB remote protocol: use --gdb")):
            with self.subTest(link=link):
                r = record(link, port)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(hint, r.stderr)
                if link == "--openocd":
                    # OpenOCD halted the target when mcuprof's Tcl bytes attached as a GDB
                    # client; mcuprof resumed it, and said so, at once (not after a time-out).
                    self.assertIn("mcuprof resumed the target", r.stderr)
        self.tcl.run("poll")
        self.assertEqual(self.state(), "running")

    def test_9_shutdown_leaves_the_target_running(self):
        self.tcl.raw("shutdown")
        self.tcl.close()
        type(self).tcl = None
        self.assertEqual(self.openocd.wait(timeout=10), 0)
        self.assertEqual(self.vprobe.wait(timeout=10), 0)
        self.vprobe_reader.join(timeout=5)
        log = "".join(self.vprobe_log)
        self.assertIn("OpenOCD quit", log)
        self.assertIn("target detached, running", log)
        self.assertTrue(guest_running(self.qemu.gdb_port), "the guest is not running after shutdown")


def guest_running(gdb_port: int) -> bool:
    """QEMU tells a new client that a running guest stopped, unasked (docs/live.md); a guest
    that was stopped already gets no such packet."""
    with socket.create_connection(("127.0.0.1", gdb_port), timeout=5) as s:
        s.settimeout(2)
        got = b""
        try:
            while b"#" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except socket.timeout:
            return False
        return b"$T02" in got


class VprobeCommandLine(unittest.TestCase):
    """How the command starts and ends: signals, a client that leaves, wrong arguments."""

    def setUp(self):
        for path in (CLI, ELF):
            if not path.is_file():
                if STRICT:
                    raise AssertionError(f"{path} is missing (make build)")
                self.skipTest(f"{path} is missing (make build)")

    def start(self, gdb_port: int) -> tuple[subprocess.Popen, int]:
        vprobe = subprocess.Popen([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{gdb_port}", "--port", "0"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        self.addCleanup(vprobe.stderr.close)
        self.addCleanup(stop_process, vprobe)
        match = re.search(r":(\d+),", vprobe.stderr.readline())
        self.assertIsNotNone(match)
        return vprobe, int(match.group(1))

    def test_signals_and_disconnect_end_it_and_leave_the_target_running(self):
        with qemu_runner.QemuRun(ELF, gdb=True, halted=True, uart=None, timeout=120) as q:
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
                    self.assertTrue(guest_running(q.gdb_port), "the guest is not running after vprobe")

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
            openocd = subprocess.Popen([OPENOCD, "-f", str(CONFIG), "-c", f"remote_bitbang port {port}",
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
