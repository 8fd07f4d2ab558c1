#!/usr/bin/env python3
"""Run a reference firmware image in QEMU, deterministically and always cleaned up.

Module (stdlib only) and command line, used by the integration tests, the benchmarks and the
demo. Every run uses ``-icount shift=0`` (one instruction = 1 ns of virtual time, runs repeat
instruction for instruction) and ARM semihosting, so the firmware ends the run itself.

    from qemu_runner import QemuRun, run_to_exit

    with QemuRun(elf, machine="netduinoplus2", truth="counts.txt") as q:
        q.wait(timeout=60)                   # until the firmware's semihosting exit
        text = q.uart_text()                 # what the firmware wrote to USART1

    with QemuRun(elf, gdb=True, halted=True) as q:
        port = q.gdb_port                    # -gdb tcp on a free port, CPU halted (-S)
        ...                                  # the process is killed when the block ends

    result = run_to_exit(elf, uart_path="uart.txt", truth_path="counts.txt", timeout=60)

    python3 firmware-ref/runner/qemu_runner.py build/firmware-ref/loops_jit_m4.elf \\
        --uart uart.txt --truth counts.txt --timeout 60

Ports are chosen at run time (a socket bound to port 0 tells a free one). The QEMU process is
reaped on every path: normal exit, exception, timeout (the context manager kills it), and it
dies with the process that started it, even a SIGKILLed one (spawn.py).
"""
from __future__ import annotations

import argparse
import errno
import functools
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

from spawn import spawn

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MACHINE = "netduinoplus2"
DEFAULT_TIMEOUT = 120.0
QEMU = os.environ.get("MCUPROF_QEMU", "qemu-system-arm")


class QemuError(RuntimeError):
    """QEMU could not be started, or failed in a way the caller asked to hear about."""


class QemuTimeout(QemuError):
    """The run did not finish within its time bound (the process has been killed)."""


# ---------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=None)
def qemu_version(qemu: str = QEMU) -> tuple[int, int]:
    """(major, minor) of a QEMU binary, from the first line of its --version."""
    out = subprocess.run([qemu, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"version (\d+)\.(\d+)", out)
    if match is None:
        raise QemuError(f"{qemu} --version said no version: {out[:200]!r}")
    return int(match.group(1)), int(match.group(2))


def one_insn_per_tb_args(qemu: str = QEMU) -> list[str]:
    """The options for one guest instruction per translation block: -singlestep until QEMU 8.1
    renamed it (QEMU 10 has no -singlestep) to the TCG accelerator's one-insn-per-tb property."""
    if qemu_version(qemu) >= (8, 1):
        return ["-accel", "tcg,one-insn-per-tb=on"]
    return ["-singlestep"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (bind port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def default_plugin() -> Path:
    """Where the truth plugin is: $MCUPROF_TRUTH_PLUGIN, else build/firmware-ref/libtruth.so."""
    env = os.environ.get("MCUPROF_TRUTH_PLUGIN")
    if env:
        return Path(env)
    return REPO_ROOT / "build" / "firmware-ref" / "libtruth.so"


def manifest_entry(elf: os.PathLike | str) -> Optional[dict]:
    """The manifest.json record written by firmware-ref/CMakeLists.txt for this image, if any."""
    elf = Path(elf)
    manifest = elf.parent / "manifest.json"
    try:
        entries = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    for entry in entries:
        if entry.get("elf") == elf.name:
            return entry
    return None


def machine_for(elf: os.PathLike | str) -> str:
    """The QEMU machine an image was built for (from the manifest), else netduinoplus2."""
    entry = manifest_entry(elf)
    if entry and entry.get("machine"):
        return entry["machine"]
    return DEFAULT_MACHINE


def _listening(port: int, pid: Optional[int] = None) -> bool:
    """True when a local socket listens on `port` (and, given `pid`, belongs to that process).
    Read from /proc, without connecting: a connection to the gdbstub would stop the guest."""
    want = ":%04X" % port
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if len(fields) > 9 and fields[1].endswith(want) and fields[3] == "0A":
                        inodes.add(fields[9])
        except OSError:
            continue
    if not inodes or pid is None:
        return bool(inodes)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


def counts_by_core(text: str) -> dict[int, dict[int, int]]:
    """The truth plugin's counts by core, {core: {address: count}}: "0xADDR COUNT" lines (one
    core), or "# vcpus N" and then "0xADDR COUNT CORE" lines (a multi-core machine)."""
    cores: dict[int, dict[int, int]] = {0: {}}
    for line in text.splitlines():
        if line.startswith("# vcpus "):
            cores = {core: {} for core in range(int(line.split()[2]))}
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        core = int(fields[2]) if len(fields) > 2 else 0
        cores[core][int(fields[0], 16)] = int(fields[1])
    return cores


def exception_entries(elf: Path) -> list[int]:
    """The distinct handler addresses of an image's vector table (its `.vectors` section, or
    the first allocated one: word 0 is the initial stack pointer, then the handlers, Thumb bit
    set), read from the ELF32 file itself; [] when there is none."""
    data = Path(elf).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    sections = [struct.unpack_from("<IIIIIIIIII", data, shoff + k * shentsize) for k in range(shnum)]
    names = sections[shstrndx][4]
    def name(sec):
        start = names + sec[0]
        return data[start:data.index(b"\0", start)].decode()
    SHT_PROGBITS, SHF_ALLOC = 1, 2
    loaded = [sec for sec in sections if sec[1] == SHT_PROGBITS and sec[2] & SHF_ALLOC and sec[5] >= 8]
    table = next((sec for sec in loaded if name(sec) == ".vectors"), min(loaded, key=lambda sec: sec[3], default=None))
    if table is None:
        return []
    words = struct.unpack_from(f"<{table[5] // 4}I", data, table[4])
    return sorted({w & ~1 for w in words[1:] if w & 1})[:64]


def census_window(before: dict[int, int], after: dict[int, int]) -> dict[int, int]:
    """The census of the window between two snapshots: what ran after `before`, by address."""
    window = {address: count - before.get(address, 0) for address, count in after.items()}
    return {address: count for address, count in window.items() if count > 0}


# ---------------------------------------------------------------- the run


class QemuRun:
    """One qemu-system-arm process running one firmware image.

    Parameters (all keyword except elf):
      machine     QEMU machine; default: the image's manifest entry, else netduinoplus2
      uart        "file" (default: USART1 to <workdir>/uart.txt), a path, "socket" (QEMU
                  connects to a listener of ours; read with uart_text()/read_uart_until()),
                  or None (output dropped)
      truth       path for the truth plugin's "0xADDR COUNT" file; None: no plugin
      plugin      path of libtruth.so (default: default_plugin())
      truth_args  more plugin arguments, e.g. the task mode's ("taskfile=PATH",
                  "tcbload=0x...", "taskswitch=0x..."; firmware-ref/truth/truth.c)
      gdb         True: -gdb on a free port (q.gdb_port); or an int port
      halted      start with the CPU stopped (-S), for a debugger to start it
      qmp         True: QMP on a free port (q.qmp_port; q.qmp(...) sends commands)
      singlestep  one guest instruction per translation block (-singlestep on QEMU 7.2,
                  -accel tcg,one-insn-per-tb=on from 8.1: one_insn_per_tb_args)
      uniform_cost_ns   the truth plugin's uniform-cost mode (needs truth): every instruction
                  takes this much host time, so wall-clock samples are proportional to
                  instructions, and census snapshots can be asked for (snapshot()); implies
                  singlestep (firmware-ref/truth/truth.c)
      pc_file     the truth plugin publishes each vCPU's current instruction in a shared file,
                  q.pc_file (pcfile=; needs truth), for `mcuprof vprobe --pc-file` to answer
                  DWT_PCSR without halting QEMU (docs/vprobe.md)
      record / replay   path of a record/replay log (-icount ...,rr=record|replay,rrfile=)
      icount_shift      default 0; None: no -icount, so that QEMU runs each vCPU of a multi-core
                  machine in a thread of its own (MTTCG; -icount runs them in turn on one thread),
                  as uniform cost on mps2-an521 needs
      icount_sleep      False: -icount ...,sleep=off, the virtual clock jumps to the next timer's
                  deadline while the core sleeps (WFI) instead of following the host's clock,
                  so a sleeping image's run is the same on any host
      timeout     seconds for wait() when it is given none; also the hard bound of the run
      workdir     where QEMU's stdout/stderr (and uart.txt) go; default: a fresh temporary
                  directory, removed at close() unless keep_workdir=True
      extra_args  more QEMU arguments
    """

    def __init__(self, elf: os.PathLike | str, machine: Optional[str] = None, *,
                 uart: Optional[str | os.PathLike] = "file",
                 truth: Optional[str | os.PathLike] = None,
                 plugin: Optional[str | os.PathLike] = None,
                 truth_args: Sequence[str] = (),
                 gdb: bool | int = False, halted: bool = False, qmp: bool = False,
                 singlestep: bool = False, uniform_cost_ns: Optional[int] = None,
                 pc_file: bool = False,
                 record: Optional[str | os.PathLike] = None,
                 replay: Optional[str | os.PathLike] = None,
                 icount_shift: Optional[int] = 0, icount_sleep: bool = True, semihosting: bool = True,
                 timeout: float = DEFAULT_TIMEOUT,
                 workdir: Optional[str | os.PathLike] = None, keep_workdir: bool = False,
                 extra_args: Sequence[str] = (), qemu: str = QEMU):
        self.elf = Path(elf)
        if not self.elf.is_file():
            raise QemuError(f"firmware image not found: {self.elf}")
        if record and replay:
            raise QemuError("record and replay are exclusive")
        self.machine = machine or machine_for(self.elf)
        self.timeout = float(timeout)
        self.truth_path = Path(truth) if truth else None
        self.plugin = Path(plugin) if plugin else default_plugin()
        self.truth_args = list(truth_args)
        if self.truth_path and not self.plugin.is_file():
            raise QemuError(f"truth plugin not found: {self.plugin} (build the host project)")
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="mcuprof-qemu-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._uart_mode = uart
        self.uart_path: Optional[Path] = None
        if uart == "file":
            self.uart_path = self.workdir / "uart.txt"
        elif uart not in (None, "socket"):
            self.uart_path = Path(uart)
        self.gdb_port: Optional[int] = None
        self._ports_are_ours = not (isinstance(gdb, int) and not isinstance(gdb, bool))
        if gdb:
            self.gdb_port = gdb if isinstance(gdb, int) and not isinstance(gdb, bool) else free_port()
        self.qmp_port: Optional[int] = free_port() if qmp else None
        self.halted = halted
        self.singlestep = singlestep or uniform_cost_ns is not None
        self.snapshot_fifo: Optional[Path] = None
        if uniform_cost_ns is not None:
            if self.truth_path is None:
                raise QemuError("uniform_cost_ns needs the truth plugin (truth=PATH)")
            self.snapshot_fifo = self.workdir / "snapshots.fifo"
            os.mkfifo(self.snapshot_fifo)
            self.truth_args += [f"cost={int(uniform_cost_ns)}", f"snapshots={self.snapshot_fifo}"]
            # The handlers' first instructions: the time census gives QEMU's work before an
            # interrupt's entry to the interrupted code (firmware-ref/truth/truth.c).
            self.truth_args += [f"entry={hex(a)}" for a in exception_entries(self.elf)]
        self.pc_file: Optional[Path] = None
        if pc_file:
            if self.truth_path is None:
                raise QemuError("pc_file needs the truth plugin (truth=PATH)")
            self.pc_file = self.workdir / "pc.slots"
            self.truth_args += [f"pcfile={self.pc_file}"]
        self._snapshots = 0
        self.record = Path(record) if record else None
        self.replay = Path(replay) if replay else None
        self.icount_shift = icount_shift
        self.icount_sleep = icount_sleep
        self.semihosting = semihosting
        self.extra_args = list(extra_args)
        self.qemu = qemu

        self.proc: Optional[subprocess.Popen] = None
        self.returncode: Optional[int] = None
        self.started_at = 0.0
        self.elapsed: Optional[float] = None
        self._uart_listener: Optional[socket.socket] = None
        self._uart_buf = bytearray()
        self._uart_lock = threading.Lock()
        self._uart_thread: Optional[threading.Thread] = None
        self._qmp_sock: Optional[socket.socket] = None
        self._qmp_file = None
        self.qmp_events: list[dict] = []
        self._uart_final: Optional[str] = None
        self.keep_workdir = keep_workdir
        self.args: list[str] = []

    # ---- command line

    def command(self) -> list[str]:
        icount = f"shift={self.icount_shift}" + ("" if self.icount_sleep else ",sleep=off")
        if self.record:
            icount += f",rr=record,rrfile={self.record}"
        elif self.replay:
            icount += f",rr=replay,rrfile={self.replay}"
        args = [self.qemu, "-M", self.machine, "-nodefaults", "-display", "none", "-kernel", str(self.elf)]
        if self.icount_shift is not None or self.record or self.replay:
            args += ["-icount", icount]
        if self.semihosting:
            args += ["-semihosting-config", "enable=on,target=native"]
        if self._uart_mode == "socket":
            args += ["-serial", f"tcp:127.0.0.1:{self._uart_listener.getsockname()[1]}"]
        elif self.uart_path is not None:
            args += ["-serial", f"file:{self.uart_path}"]
        if self.truth_path is not None:
            args += ["-plugin", ",".join([f"{self.plugin}", f"outfile={self.truth_path}", *self.truth_args])]
        if self.gdb_port is not None:
            args += ["-gdb", f"tcp:127.0.0.1:{self.gdb_port}"]
        if self.halted:
            args += ["-S"]
        if self.qmp_port is not None:
            args += ["-qmp", f"tcp:127.0.0.1:{self.qmp_port},server=on,wait=off"]
        if self.singlestep:
            args += one_insn_per_tb_args(self.qemu)
        return args + self.extra_args

    # ---- lifecycle

    def start(self) -> "QemuRun":
        if self.proc is not None:
            raise QemuError("already started")
        if self._uart_mode == "socket":
            self._uart_listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._uart_listener.bind(("127.0.0.1", 0))
            self._uart_listener.listen(1)
        # A port found free may be taken by someone else before QEMU binds it: then QEMU exits
        # at once, and we try again with new ports (only with ports we chose ourselves).
        for attempt in range(3):
            try:
                self._launch()
                return self
            except QemuError:
                busy = "in use" in self.stderr_text() and self._ports_are_ours
                self.kill()
                self._close_files()
                if not busy or attempt == 2:
                    self.close()
                    raise
                self.proc = None
                if self.gdb_port is not None:
                    self.gdb_port = free_port()
                if self.qmp_port is not None:
                    self.qmp_port = free_port()
            except BaseException:
                self.close()
                raise
        return self  # pragma: no cover

    def _launch(self) -> None:
        self.args = self.command()
        self._stdout = open(self.workdir / "qemu.stdout", "wb")
        self._stderr = open(self.workdir / "qemu.stderr", "wb")
        self.started_at = time.monotonic()
        try:
            self.proc = spawn(self.args, stdin=subprocess.DEVNULL, stdout=self._stdout, stderr=self._stderr)
        except OSError as e:
            raise QemuError(f"cannot start {self.qemu}: {e}") from e
        if self._uart_mode == "socket":
            self._accept_uart()
        if self.qmp_port is not None:
            self._qmp_connect()
        if self.gdb_port is not None:
            self.wait_listening(self.gdb_port)

    def __enter__(self) -> "QemuRun":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: Optional[float] = None) -> int:
        """Wait for QEMU to exit (the firmware's semihosting exit); return its exit status.
        On timeout kill it and raise QemuTimeout."""
        if self.proc is None:
            raise QemuError("not started")
        limit = self.timeout if timeout is None else timeout
        try:
            self.returncode = self.proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.kill()
            raise QemuTimeout(f"{self.elf.name}: no exit within {limit:.0f} s; killed. "
                              f"stderr: {self.stderr_text()[-400:]!r}") from None
        self.elapsed = time.monotonic() - self.started_at
        self._join_uart()
        return self.returncode

    def stop(self, grace: float = 5.0) -> Optional[int]:
        """End the run politely (SIGTERM: QEMU shuts down, plugins write their output),
        then by force after `grace` seconds."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.returncode = self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        else:
            self.returncode = self.proc.returncode
        self._join_uart()
        return self.returncode

    def kill(self) -> None:
        """Kill QEMU now (SIGKILL) and reap it. The truth file is not written."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.returncode = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
                pass

    def close(self) -> None:
        """Kill if still running, reap, release sockets and files."""
        self.kill()
        if self._qmp_sock is not None:
            try:
                self._qmp_sock.close()
            except OSError:
                pass
            self._qmp_sock = None
        if self._uart_listener is not None:
            try:
                self._uart_listener.close()
            except OSError:
                pass
            self._uart_listener = None
        self._join_uart()
        self._close_files()
        if self._uart_final is None:
            self._uart_final = self.uart_text()  # still readable after the workdir is gone
        if self._own_workdir and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _close_files(self) -> None:
        for f in (getattr(self, "_stdout", None), getattr(self, "_stderr", None)):
            if f is not None and not f.closed:
                f.close()

    # ---- census snapshots (uniform-cost mode)

    def _snapshot_file(self, timeout: float) -> Path:
        """Asks the plugin for a snapshot and waits for its file."""
        if self.snapshot_fifo is None:
            raise QemuError("snapshot() needs uniform_cost_ns")
        self._snapshots += 1
        path = self.workdir / f"snapshot-{self._snapshots}.txt"
        # O_NONBLOCK | O_WRONLY fails at once (ENXIO) when QEMU has not opened the pipe yet.
        deadline = time.monotonic() + timeout
        while True:
            try:
                fd = os.open(self.snapshot_fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO or time.monotonic() > deadline or not self.running():
                    raise QemuError(f"cannot ask for a snapshot: {e}") from e
                time.sleep(0.05)
        try:
            os.write(fd, f"{path}\n".encode())
        finally:
            os.close(fd)
        while not path.exists():
            if time.monotonic() > deadline or not self.running():
                raise QemuError(f"the truth plugin wrote no snapshot {path} within {timeout} s")
            time.sleep(0.01)
        return path

    def snapshot(self, timeout: float = 60.0) -> dict[int, int]:
        """The exact count of every instruction executed so far, {address: count}, taken by the
        plugin between two instructions (every core's, on a multi-core machine). The vCPU must be
        running: a halted one serves the request when it runs again. The difference of two
        snapshots is the census of the window between them."""
        counts: dict[int, int] = {}
        path = self._snapshot_file(timeout)
        self.last_snapshot = path
        for by_address in counts_by_core(path.read_text()).values():
            for address, count in by_address.items():
                counts[address] = counts.get(address, 0) + count
        return counts

    def snapshot_by_core(self, timeout: float = 60.0) -> dict[int, dict[int, int]]:
        """snapshot() of each core apart: {core: {address: count}}, every core of the machine
        listed (the plugin counts per vCPU on a multi-core machine)."""
        path = self._snapshot_file(timeout)
        self.last_snapshot = path
        return counts_by_core(path.read_text())

    def snapshot_times(self) -> dict[int, int]:
        """The host nanoseconds of every instruction so far, {address: ns}, of the last
        snapshot(): the time a wall-clock halt would have found each instruction next
        (firmware-ref/truth/truth.c, truth_before_each). The difference of two is the time
        census of the window between them."""
        return self._time_column(1)

    def snapshot_stalls(self) -> dict[int, int]:
        """The part of snapshot_times() given in single stretches longer than any instruction
        takes (20 us), {address: ns} (FILE.time's third column; truth.c, charge_time): the host
        preempting QEMU's vCPU thread, or a gap moved to the interrupted instruction before an
        exception entry. A sampler that waits for its own halts finds a stall at most once,
        however long it is. The difference of two is the window's."""
        return self._time_column(2)

    def _time_column(self, column: int) -> dict[int, int]:
        ns: dict[int, int] = {}
        for line in Path(f"{self.last_snapshot}.time").read_text().splitlines():
            fields = line.split()
            ns[int(fields[0], 16)] = int(fields[column])
        return ns

    def snapshot_shown(self) -> dict[int, int]:
        """The PC-read census of the last snapshot(): the host nanoseconds each address was its
        vCPU's published PC so far, {address: ns} (FILE.pcsr; firmware-ref/truth/truth.c,
        charge_shown): the reference of non-intrusive PC reads (vprobe --pc-file), as
        snapshot_times() is of halts. The difference of two is the window's."""
        shown: dict[int, int] = {}
        for line in Path(f"{self.last_snapshot}.pcsr").read_text().splitlines():
            address, ns = line.split()[:2]
            shown[int(address, 16)] = int(ns)
        return shown

    def snapshot_and_times(self, timeout: float = 60.0) -> tuple[dict[int, int], dict[int, int]]:
        """snapshot() and the time census of that same snapshot (snapshot_times()): the counts
        and the host nanoseconds of every instruction so far. The difference of two, each by
        census_window(), is the window's exact count and the reference of wall-clock halts."""
        counts = self.snapshot(timeout)
        return counts, self.snapshot_times()

    def snapshot_census(self, timeout: float = 60.0) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
        """snapshot_and_times() and the stalls of that same snapshot (snapshot_stalls()): each
        of the three, by census_window(), gives a window's counts, time census and stalls."""
        counts, times = self.snapshot_and_times(timeout)
        return counts, times, self.snapshot_stalls()

    # ---- output

    def uart_text(self) -> str:
        """Everything the firmware wrote to USART1 so far."""
        if self._uart_final is not None:
            return self._uart_final
        if self._uart_mode == "socket":
            with self._uart_lock:
                return self._uart_buf.decode("ascii", errors="replace")
        if self.uart_path is not None and self.uart_path.exists():
            return self.uart_path.read_text(encoding="ascii", errors="replace")
        return ""

    def read_uart_until(self, marker: str, timeout: Optional[float] = None) -> str:
        """Wait until `marker` appears in the UART output; return the text so far."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            text = self.uart_text()
            if marker in text:
                return text
            if not self.running():
                # The socket's last bytes may still be on their way to the pump thread when QEMU
                # has exited (seen on a loaded host): read to the end of the stream first.
                self._join_uart()
                text = self.uart_text()
                if marker in text:
                    return text
                raise QemuError(f"QEMU exited before {marker!r} appeared on the UART")
            if time.monotonic() > deadline:
                raise QemuTimeout(f"{marker!r} did not appear on the UART in time")
            time.sleep(0.02)

    def stderr_text(self) -> str:
        try:
            return (self.workdir / "qemu.stderr").read_text(errors="replace")
        except OSError:
            return ""

    def _accept_uart(self) -> None:
        self._uart_listener.settimeout(10.0)
        try:
            conn, _ = self._uart_listener.accept()
        except socket.timeout:
            raise QemuError(f"QEMU did not connect its serial port: {self.stderr_text()[-400:]!r}")

        def pump() -> None:
            with conn:
                while True:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    with self._uart_lock:
                        self._uart_buf += data

        self._uart_thread = threading.Thread(target=pump, daemon=True)
        self._uart_thread.start()

    def _join_uart(self) -> None:
        if self._uart_thread is not None and (self.proc is None or self.proc.poll() is not None):
            self._uart_thread.join(timeout=5)

    # ---- ports

    def wait_listening(self, port: int, timeout: float = 10.0) -> None:
        """Wait until QEMU listens on `port`, without connecting to it."""
        deadline = time.monotonic() + timeout
        while not _listening(port, self.proc.pid if self.proc else None):
            if not self.running():
                raise QemuError(f"QEMU exited early (port {port} busy?): {self.stderr_text()[-400:]!r}")
            if time.monotonic() > deadline:
                raise QemuError(f"QEMU did not listen on port {port}")
            time.sleep(0.01)

    def _qmp_connect(self) -> None:
        self.wait_listening(self.qmp_port)
        try:
            self._qmp_sock = socket.create_connection(("127.0.0.1", self.qmp_port), timeout=10)
            self._qmp_file = self._qmp_sock.makefile("rwb")
            greeting = self._qmp_read()
            if "QMP" not in greeting:
                raise QemuError(f"unexpected QMP greeting: {greeting}")
            self.qmp("qmp_capabilities")
        except (OSError, QemuError) as e:
            # QEMU listens on QMP before it binds the gdbstub's port: when that port was taken
            # meanwhile, QEMU exits ("in use") and this connection is reset. Wait for that exit
            # (not a fixed time: its stderr is what start() reads to retry on fresh ports), then
            # say how QEMU ended and what it printed.
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            state = "running" if self.running() else f"exited with {self.proc.returncode}"
            raise QemuError(f"QMP on port {self.qmp_port}: {e!r}; QEMU {state}; "
                            f"stderr: {self.stderr_text()[-400:]!r}") from e

    def _qmp_read(self) -> dict:
        line = self._qmp_file.readline()
        if not line:
            raise QemuError("QMP connection closed")
        return json.loads(line)

    def qmp(self, command: str, **arguments) -> dict:
        """Send one QMP command and return its "return" value. Asynchronous events that
        arrive first are kept in self.qmp_events."""
        if self._qmp_file is None:
            raise QemuError("QMP is not enabled for this run (qmp=True)")
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self._qmp_file.write(json.dumps(msg).encode() + b"\n")
        self._qmp_file.flush()
        while True:
            reply = self._qmp_read()
            if "event" in reply:
                self.qmp_events.append(reply)
                continue
            if "error" in reply:
                raise QemuError(f"QMP {command}: {reply['error']}")
            return reply.get("return", {})

    def __repr__(self) -> str:
        return f"QemuRun({self.elf.name}, machine={self.machine}, pid={self.proc.pid if self.proc else None})"


# ---------------------------------------------------------------- one-shot helper


class RunResult:
    def __init__(self, returncode: int, uart: str, truth_path: Optional[Path], seconds: float,
                 args: list[str]):
        self.returncode = returncode
        self.uart = uart
        self.truth_path = truth_path
        self.seconds = seconds
        self.args = args

    def __repr__(self) -> str:
        return f"RunResult(rc={self.returncode}, {len(self.uart)} UART chars, {self.seconds:.2f} s)"


def run_to_exit(elf: os.PathLike | str, machine: Optional[str] = None, *,
                uart_path: Optional[os.PathLike | str] = None,
                truth_path: Optional[os.PathLike | str] = None,
                timeout: float = DEFAULT_TIMEOUT, check: bool = True, **kwargs) -> RunResult:
    """Run an image to its semihosting exit; return the UART text (and write the truth).
    check: raise QemuError when the exit status is not 0."""
    with QemuRun(elf, machine, uart=uart_path or "file", truth=truth_path, timeout=timeout,
                 **kwargs) as q:
        rc = q.wait()
        text = q.uart_text()
        if check and rc != 0:
            raise QemuError(f"{Path(elf).name}: QEMU exit status {rc}; "
                            f"UART tail {text[-200:]!r}; stderr {q.stderr_text()[-400:]!r}")
        if truth_path is not None and not Path(truth_path).exists():
            raise QemuError(f"{Path(elf).name}: the truth plugin wrote no {truth_path}")
        return RunResult(rc, text, Path(truth_path) if truth_path else None,
                         q.elapsed or 0.0, q.args)


# ---------------------------------------------------------------- command line


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description="Run a reference firmware image in QEMU (-icount shift=0, semihosting) "
                    "to its exit; write the USART1 text and the truth counts.")
    ap.add_argument("elf", help="firmware image (.elf)")
    ap.add_argument("--machine", help="QEMU machine (default: from manifest.json, else %s)"
                    % DEFAULT_MACHINE)
    ap.add_argument("--uart", help="write the USART1 output here (default: standard output)")
    ap.add_argument("--truth", help="write the truth plugin's '0xADDR COUNT' lines here")
    ap.add_argument("--plugin", help="truth plugin .so (default: %s)" % default_plugin())
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds (default %(default)s)")
    ap.add_argument("--gdb", nargs="?", const=0, type=int, metavar="PORT",
                    help="open the gdbstub (on PORT, or a free port when omitted)")
    ap.add_argument("--halted", action="store_true", help="start with the CPU halted (-S)")
    ap.add_argument("--qmp", action="store_true", help="open QMP on a free port")
    ap.add_argument("--singlestep", action="store_true", help="one instruction per TB")
    rr = ap.add_mutually_exclusive_group()
    rr.add_argument("--record", metavar="FILE", help="record the run (icount rr=record)")
    rr.add_argument("--replay", metavar="FILE", help="replay a recorded run (icount rr=replay)")
    ap.add_argument("--print-command", action="store_true", help="print the QEMU command line")
    ap.add_argument("qemu_args", nargs="*", help="extra QEMU arguments (after --)")
    a = ap.parse_args(argv)

    gdb = False if a.gdb is None else (True if a.gdb == 0 else a.gdb)
    workdir = Path(tempfile.mkdtemp(prefix="mcuprof-qemu-"))
    uart = a.uart if a.uart else str(workdir / "uart.txt")
    try:
        with QemuRun(a.elf, a.machine, uart=uart, truth=a.truth, plugin=a.plugin, gdb=gdb,
                     halted=a.halted, qmp=a.qmp, singlestep=a.singlestep, record=a.record,
                     replay=a.replay, timeout=a.timeout, workdir=workdir,
                     extra_args=a.qemu_args) as q:
            if a.print_command:
                print(" ".join(q.args), file=sys.stderr)
            if q.gdb_port is not None:
                print(f"gdb: target remote 127.0.0.1:{q.gdb_port}", file=sys.stderr, flush=True)
            if q.qmp_port is not None:
                print(f"qmp: 127.0.0.1:{q.qmp_port}", file=sys.stderr, flush=True)
            try:
                rc = q.wait()
            except QemuTimeout as e:
                print(f"qemu_runner: {e}", file=sys.stderr)
                return 124
            if not a.uart:
                sys.stdout.write(q.uart_text())
            print(f"qemu_runner: {Path(a.elf).name} on {q.machine}: exit {rc} in {q.elapsed:.2f} s"
                  + (f"; truth -> {a.truth}" if a.truth else ""), file=sys.stderr)
            if rc != 0:
                err = q.stderr_text().strip()
                if err:
                    print(err[-2000:], file=sys.stderr)
            return rc
    except QemuError as e:
        print(f"qemu_runner: {e}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
