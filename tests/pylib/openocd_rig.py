"""The OpenOCD rig the vprobe tests share: QEMU running a reference image, `mcuprof vprobe`
in front of its gdbstub (remote_bitbang or ST-Link), the real OpenOCD on the probe, and a
client for OpenOCD's Tcl RPC port; the ELF read with binutils; processes started and stopped.

Environment (set by the CMakeLists.txt of the tests that use it, under ctest):
  MCUPROF_CLI, MCUPROF_FW_DIR   the mcuprof executable and the reference ELFs
  MCUPROF_OPENOCD               the openocd executable (default: openocd on PATH)
  MCUPROF_UNIT_TESTS            the unit-test executable
  MCUPROF_UNDER_CTEST           set: a missing tool or file fails instead of skipping
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

import qemu_runner
from elf_symbols import nm_symbols
from spawn import spawn

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("MCUPROF_CLI", REPO / "build" / "mcuprof"))
FW_DIR = Path(os.environ.get("MCUPROF_FW_DIR", REPO / "build" / "firmware-ref"))
OPENOCD = os.environ.get("MCUPROF_OPENOCD", "openocd")
UNIT_TESTS = Path(os.environ.get("MCUPROF_UNIT_TESTS", REPO / "build" / "tests" / "mcuprof_tests"))
CONFIG = REPO / "configs" / "openocd" / "qemu-vprobe.cfg"
STLINK_CONFIG = REPO / "configs" / "openocd" / "qemu-stlink.cfg"
# The image the rigs debug unless a test names another: it never ends.
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


# The truth plugin's uniform-cost mode (docs/firmware-ref.md): 2000 ns of host time an
# instruction, where 500 ns left QEMU's own work at each timer event a tenth of the time.
UNIFORM_COST_NS = 2000


def cpus_apart() -> tuple[set[int], set[int]]:
    """This process's CPUs split for start_rig(apart=True): the first for QEMU, the rest for the
    reading side. ValueError when there are fewer than two (then nothing can be kept apart)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise ValueError(f"one CPU only ({cpus}): QEMU and the reader cannot be kept apart")
    return {cpus[0]}, set(cpus[1:])


def pin_process(pid: int, cpus: set[int]) -> None:
    """Every thread of process `pid` to `cpus` (threads it starts later inherit their
    creator's CPUs)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:
            pass   # a thread that ended meanwhile


def guest_threads_below(pid: int) -> list[str]:
    """QEMU's vCPU threads (named "CPU n/TCG", or "ALL CPUs/TCG" for the round-robin thread of
    -icount, where QEMU runs with -name debug-threads=on) at nice 19, below its main thread,
    which answers the gdbstub; returns their names. On one CPU with it, a vCPU thread at the
    same priority keeps a halt request waiting for the rest of its time slice."""
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            if name.endswith("/TCG"):
                os.setpriority(os.PRIO_PROCESS, int(tid), 19)
                names.append(name)
        except (ProcessLookupError, FileNotFoundError):
            pass   # a thread that ended meanwhile
    return names


def start_rig(rig, elf: Path, *, truth: Path | None = None, singlestep: bool = False,
              vprobe_options: tuple[str, ...] = (), openocd_gdb: bool = False,
              uniform_cost_ns: int | None = None, openocd_commands: tuple[str, ...] = (),
              icount_shift: int | None = 0, pc_file: bool = False, apart: bool = False,
              guest_below: bool = False) -> None:
    """QEMU running `elf` (halted at first, then let run by the vprobe; -singlestep and the
    truth plugin writing `truth` when asked), `mcuprof vprobe` in front of its gdbstub, and
    OpenOCD on the vprobe, on ports chosen now; `uniform_cost_ns`: the truth plugin's
    uniform-cost mode, with census snapshots (rig.qemu.snapshot()); `icount_shift` None: no -icount, so
    that each vCPU of a multi-core machine runs in a thread of its own (MTTCG). Sets on `rig` (whose `work` folder exists):
    qemu, vprobe, vprobe_log (its stderr lines, read as they come so the pipe never fills),
    vprobe_reader, bitbang_port (the probe's port, either protocol), openocd, openocd_log,
    tcl_port, gdb_port (OpenOCD's, None unless `openocd_gdb`), tcl. What started is stopped by
    stop_rig(rig); when starting fails, start_rig stops what it started (and removes `work`)
    before it raises.

    The probe is remote_bitbang (JTAG, qemu-vprobe.cfg), or, when `rig.stlink_transport` is
    "dapdirect_swd" or "hla_swd", an ST-Link over SWD (vprobe --stlink-port, qemu-stlink.cfg);
    `rig.probe_link`, when set, is called with the probe's port and returns the port OpenOCD
    connects to (a proxy in between). `openocd_commands`: more configuration commands (-c),
    after the probe's configuration and before `init`.

    `pc_file`: DWT_PCSR is answered without halting QEMU, from the truth plugin's PC file
    (vprobe --pc-file; the plugin is loaded for it, counting into the work folder, when `truth`
    is not given), as silicon answers it without stopping the core; the tests held to the PC-read
    census ask for it (tests/vprobe/test_oracle_pcsr.py, run by hand). False (the default, as every other test
    was measured): every read is a brief halt of QEMU, the vprobe's fallback, whose back-to-back
    reads bend the profile (docs/vprobe.md, "DWT_PCSR without a halt"). A default for every rig
    waits until each test has been run with it on both QEMUs (vprobe.cores' two-core classes
    failed through it on QEMU 10.0.2). Not with `--no-dwt` among `vprobe_options`.

    `apart`: QEMU on one CPU, the reading side (this process and what it starts next: the
    vprobe, OpenOCD, a recording) on the others (cpus_apart()), so that QEMU's own threads never
    take the reader's CPU at the guest's timer events (docs/vprobe.md, "Reads apart from QEMU");
    this process's CPUs are given back by stop_rig.

    `guest_below` (with `apart`): QEMU's vCPU threads below its main thread
    (guest_threads_below), so that on QEMU's CPU a halt or a register read is served at once
    rather than after the guest's time slice, as a probe's halt waits for no host scheduler."""
    rig.qemu = rig.vprobe = rig.openocd = rig.tcl = rig.openocd_log = None
    rig.cpus_before = None
    rig.vprobe_log = []
    rig.rig_stopped = False
    try:
        stlink = getattr(rig, "stlink_transport", None)
        pc_file = pc_file and "--no-dwt" not in vprobe_options
        if pc_file and truth is None:
            truth = rig.work / "truth-pc-file.txt"
        rig.qemu = qemu_runner.QemuRun(elf, gdb=True, halted=True, qmp=True, singlestep=singlestep, truth=truth,
                                       uniform_cost_ns=uniform_cost_ns, icount_shift=icount_shift, uart=None,
                                       pc_file=pc_file, timeout=600,
                                       extra_args=("-name", "debug-threads=on") if guest_below else ()).start()
        if apart:
            qemu_cpus, reader_cpus = cpus_apart()
            rig.cpus_before = os.sched_getaffinity(0)
            pin_process(rig.qemu.proc.pid, qemu_cpus)   # before its guest runs (-S): every thread it has
            os.sched_setaffinity(0, reader_cpus)        # inherited by what is started from here on
        if guest_below and not guest_threads_below(rig.qemu.proc.pid):
            raise AssertionError("QEMU named no vCPU thread (-name debug-threads=on)")
        pc_options = ("--pc-file", str(rig.qemu.pc_file)) if pc_file else ()
        rig.vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{rig.qemu.gdb_port}",
                            "--stlink-port" if stlink else "--port", "0", *pc_options, *vprobe_options],
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
        rig.openocd = spawn(
            [OPENOCD, *probe,
             "-c", f"gdb_port {rig.gdb_port}" if openocd_gdb else "gdb_port disabled", "-c", "telnet_port disabled",
             "-c", f"tcl_port {rig.tcl_port}", *(a for c in openocd_commands for a in ("-c", c)), "-c", "init"],
            stdin=subprocess.DEVNULL, stdout=rig.openocd_log, stderr=subprocess.STDOUT, cwd=rig.work)
        wait_port(rig.tcl_port, rig.openocd, "openocd")
        rig.tcl = TclRpc(rig.tcl_port)
        wait_first_poll(rig.tcl)
    except BaseException:
        stop_rig(rig)
        raise


def wait_first_poll(tcl: TclRpc, timeout: float = 30.0) -> None:
    """Waits until OpenOCD has polled each target once. `init` examines the targets and opens
    the Tcl port, but a target's state stays "unknown" until the first background poll
    (target.c, handle_target, every 100 ms); on a loaded host a test's first `curstate` came
    before it (a Debian 13 root beside the robustness builds). Sends no `poll` of its own, so
    that the probe's traffic is what OpenOCD makes by itself; after `timeout` it returns and
    leaves the state to the test's own assertions."""
    deadline = time.monotonic() + timeout
    script = "set _s {}; foreach _t [target names] {lappend _s [$_t curstate]}; set _s"
    while "unknown" in tcl.run(script).split() and time.monotonic() < deadline:
        time.sleep(0.05)


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
    vprobe likewise, QEMU closed, the work folder removed. A second call does nothing."""
    if getattr(rig, "rig_stopped", False):
        return
    rig.rig_stopped = True
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
        # The reader reaches the end of the exited probe's stderr by itself; closing the pipe
        # under it would raise in its thread.
        if getattr(rig, "vprobe_reader", None) is not None:
            rig.vprobe_reader.join(timeout=5)
        rig.vprobe.stderr.close()
    if getattr(rig, "qemu", None) is not None:
        rig.qemu.close()
    if getattr(rig, "openocd_log", None):
        rig.openocd_log.close()
    if getattr(rig, "cpus_before", None):
        os.sched_setaffinity(0, rig.cpus_before)
    shutil.rmtree(rig.work, ignore_errors=True)


class RigClass:
    """The start and stop of a test class's rig, in one place. setUpClass checks the class's
    requirements() (require: skip, or under ctest fail, when a tool or file is missing), makes
    the work folder (prefix `work_prefix`) and calls the class's with_rig(), which starts the rig
    (start_rig) and does with it what the class does; when anything there raises, the rig is
    stopped at once, since unittest calls no tearDownClass after a failed setUpClass; else
    tearDownClass stops it. A class that measures once and whose tests read what it kept ends
    with_rig() with stop_rig(cls) (a second stop_rig does nothing). Put it first among the bases:
    class X(RigClass, unittest.TestCase)."""
    work_prefix = "mcuprof-rig-"

    @classmethod
    def requirements(cls) -> None:
        pass

    @classmethod
    def with_rig(cls) -> None:
        raise NotImplementedError(f"{cls.__name__} starts no rig (with_rig)")

    @classmethod
    def setUpClass(cls):
        cls.requirements()
        # Nothing started yet, whatever a base class's rig left in these attributes.
        cls.qemu = cls.vprobe = cls.openocd = cls.tcl = cls.openocd_log = None
        cls.rig_stopped = False
        cls.work = Path(tempfile.mkdtemp(prefix=cls.work_prefix))
        try:
            cls.with_rig()
        except BaseException:
            stop_rig(cls)
            raise

    @classmethod
    def tearDownClass(cls):
        stop_rig(cls)


def guest_running(qemu: qemu_runner.QemuRun) -> bool:
    """Whether QEMU's guest runs, asked of QEMU's QMP (query-status), which leaves it as it is.
    (A new GDB client is no oracle: QEMU 7.2 tells it unasked that a running guest stopped,
    QEMU 10 stops the guest silently and says nothing until asked.)"""
    return bool(qemu.qmp("query-status")["running"])


def guest_runs(qemu: qemu_runner.QemuRun, within: float = 10.0) -> bool:
    """Whether QEMU's guest runs (QMP), given `within` seconds: the vprobe holds a core it
    stopped for a burst of memory accesses until its link has been idle 1 ms; a core left
    halted stays so."""
    deadline = time.monotonic() + within
    while not guest_running(qemu) and time.monotonic() < deadline:
        time.sleep(0.05)
    return guest_running(qemu)


def qemu_machines(qemu: str) -> set[str]:
    """The machines `qemu -M help` lists."""
    listing = subprocess.run([qemu, "-M", "help"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in listing.splitlines()[1:] if line.strip()}


# The start of an assembled image for assemble_image: a vector table of SP and the reset vector,
# then the function `loop`, whose instructions the caller's source goes on with.
LOOP_START = """
    .syntax unified
    .thumb
    .section .vectors, "a"
    .word 0x20001000
    .word loop + 1
    .text
    .thumb_func
    .global loop
    .type loop, %function
loop:
"""


def assemble_image(work: Path, source: str, flash: int, cpu: str) -> Path:
    """An ELF of the assembly `source` (a .vectors section, then .text) for `cpu`, its vector
    table at `flash` and its code 0x40 bytes after."""
    source_file, obj, elf = work / "loop.s", work / "loop.o", work / "loop.elf"
    source_file.write_text(source)
    subprocess.run(["arm-none-eabi-as", f"-mcpu={cpu}", "-o", str(obj), str(source_file)], check=True)
    subprocess.run(["arm-none-eabi-ld", "-Ttext", hex(flash + 0x40), "--section-start", f".vectors={flash:#x}",
                    "-e", "loop", "-o", str(elf), str(obj)], check=True)
    return elf
