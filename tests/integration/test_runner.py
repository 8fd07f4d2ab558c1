"""The QEMU runner (firmware-ref/runner/qemu_runner.py) and the truth plugin: ports, halting,
QMP, UART socket, timeouts, clean-up, record/replay, and the plugin's exactness."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from fwtest import PLUGIN, REPO, by_function, elf_path, read_counts, symbols

import qemu_runner  # noqa: E402
from spawn import spawn  # noqa: E402
from qemu_runner import QemuRun, QemuTimeout  # noqa: E402

RUNNER = REPO / "firmware-ref" / "runner" / "qemu_runner.py"


def gone(proc) -> bool:
    return proc is not None and proc.poll() is not None


def gdb_packet(sock, payload: str) -> str:
    """Send one RSP packet, return the reply payload (QEMU 7.2 acks; no no-ack mode)."""
    csum = sum(payload.encode()) & 0xFF
    sock.sendall(f"${payload}#{csum:02x}".encode())
    buf = b""
    while True:
        m = re.search(rb"\$([^#]*)#[0-9a-fA-F]{2}", buf)
        if m:
            sock.sendall(b"+")
            return m.group(1).decode()
        chunk = sock.recv(4096)
        if not chunk:
            return buf.decode(errors="replace")
        buf += chunk


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="mcuprof-runner-"))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_runs_to_semihosting_exit_and_writes_uart(self):
        res = qemu_runner.run_to_exit(elf_path("cost_m4"), uart_path=self.tmp / "u.txt")
        self.assertEqual(res.returncode, 0)
        self.assertIn("cost off=", res.uart)
        self.assertIn("-icount", res.args)
        self.assertEqual(res.args[res.args.index("-M") + 1], "netduinoplus2")

    def test_machine_comes_from_the_manifest(self):
        self.assertEqual(qemu_runner.machine_for(elf_path("cost_m3")), "netduino2")
        self.assertEqual(qemu_runner.machine_for(elf_path("cost_m4")), "netduinoplus2")

    def test_gdb_halted_then_continue_to_exit(self):
        with QemuRun(elf_path("cost_m4"), gdb=True, halted=True, timeout=60) as q:
            self.assertIsNotNone(q.gdb_port)
            with socket.create_connection(("127.0.0.1", q.gdb_port), timeout=10) as s:
                self.assertRegex(gdb_packet(s, "?"), r"^[ST]05")
                s.sendall(b"$c#63")
                self.assertEqual(q.wait(30), 0)
            self.assertIn("cost off=", q.uart_text())
        self.assertTrue(gone(q.proc))

    def test_qmp_query_and_continue(self):
        with QemuRun(elf_path("cost_m4"), qmp=True, halted=True, timeout=60) as q:
            status = q.qmp("query-status")
            self.assertFalse(status["running"])
            # The guest runs to its semihosting exit in milliseconds, and QEMU may exit before the
            # reply to `cont` is read (seen at load 4: the connection reset): the exit status, 0
            # only when the guest ran to its end, is what shows that `cont` resumed it.
            try:
                q.qmp("cont")
            except (ConnectionResetError, BrokenPipeError, qemu_runner.QemuError):
                pass
            self.assertEqual(q.wait(30), 0)

    def test_uart_over_a_socket(self):
        with QemuRun(elf_path("tick_m4"), uart="socket", timeout=60) as q:
            text = q.read_uart_until("\nend\n", timeout=60)
            self.assertTrue(text.startswith("prof raw n=1000"))
            q.wait(30)

    def test_timeout_kills_and_reaps(self):
        q = QemuRun(elf_path("loops_jit_m4"), timeout=0.3)
        with q:
            with self.assertRaises(QemuTimeout):
                q.wait()
            self.assertTrue(gone(q.proc))

    def test_exception_inside_the_block_kills_qemu(self):
        with self.assertRaises(RuntimeError):
            with QemuRun(elf_path("cost_m4"), gdb=True, halted=True) as q:
                self.assertTrue(q.running())
                raise RuntimeError("test")
        self.assertTrue(gone(q.proc))

    def test_two_runs_get_different_free_ports(self):
        with QemuRun(elf_path("cost_m4"), gdb=True, qmp=True, halted=True) as a, \
                QemuRun(elf_path("cost_m4"), gdb=True, qmp=True, halted=True) as b:
            ports = {a.gdb_port, a.qmp_port, b.gdb_port, b.qmp_port}
            self.assertEqual(len(ports), 4)
        self.assertTrue(gone(a.proc) and gone(b.proc))

    def test_a_port_taken_meanwhile_is_replaced(self):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        real, handed = qemu_runner.free_port, []

        def first_busy(host="127.0.0.1"):
            handed.append(busy if not handed else real(host))
            return handed[-1]

        qemu_runner.free_port = first_busy
        try:
            # With QMP, QEMU listens there before it fails on the gdbstub's port, so the QMP
            # connection is reset under the runner: a failed start all the same (seen under
            # parallel tests as ConnectionResetError, not retried).
            for qmp in (False, True):
                handed.clear()
                with QemuRun(elf_path("cost_m4"), gdb=True, qmp=qmp, halted=True) as q:
                    self.assertNotEqual(q.gdb_port, busy)
                    self.assertTrue(q.running())
                    if qmp:
                        self.assertFalse(q.qmp("query-status")["running"])
                self.assertTrue(gone(q.proc))
            # a port the caller named is not replaced: the run fails instead
            with self.assertRaises(qemu_runner.QemuError):
                QemuRun(elf_path("cost_m4"), gdb=busy, halted=True).start()
        finally:
            qemu_runner.free_port = real
            taken.close()

    def test_command_line(self):
        uart, truth = self.tmp / "u.txt", self.tmp / "t.txt"
        p = subprocess.run([sys.executable, str(RUNNER), str(elf_path("cost_m4")), "--uart", str(uart),
                            "--truth", str(truth), "--plugin", str(PLUGIN), "--timeout", "60"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("cost off=", uart.read_text())
        lines = truth.read_text().splitlines()
        self.assertTrue(lines)
        self.assertTrue(all(re.fullmatch(r"0x[0-9a-f]{8} [1-9][0-9]*", l) for l in lines))
        addrs = [int(l.split()[0], 16) for l in lines]
        self.assertEqual(addrs, sorted(set(addrs)))

    def test_command_line_timeout_exit_code(self):
        p = subprocess.run([sys.executable, str(RUNNER), str(elf_path("loops_jit_m4")), "--timeout", "0.3"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 124)


# A parent that starts a child its own way, prints the child's pid, then waits to be killed:
# "spawn" and "qemu" by spawn.py (a sleep; QEMU through QemuRun), "plain" by a bare Popen.
PARENT = """
import subprocess, sys, time
import qemu_runner
from spawn import spawn
how = sys.argv[1]
if how == "spawn":
    pid = spawn(["sleep", "600"]).pid
elif how == "qemu":
    q = qemu_runner.QemuRun(sys.argv[2], gdb=True, halted=True, uart=None, workdir=sys.argv[3]).start()
    pid = q.proc.pid
else:
    pid = subprocess.Popen(["sleep", "600"], start_new_session=True).pid
print(pid, flush=True)
time.sleep(600)
"""


def dead(pid: int) -> bool:
    """The process is gone, or a zombie waiting for init (or a subreaper) to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


class DiesWithItsParent(unittest.TestCase):
    """spawn.py: a long-lived child is SIGKILLed when the process that started it dies, even by
    SIGKILL (no handler, no finally in it runs)."""

    def child_of_a_killed_parent(self, *how: str) -> int:
        # The parent itself by spawn(): it goes too should this test be killed meanwhile.
        parent = spawn([sys.executable, "-c", PARENT, *how], stdout=subprocess.PIPE, text=True)
        try:
            line = parent.stdout.readline()   # the child runs: the parent printed its pid
        finally:
            parent.kill()
            parent.wait(timeout=60)
            parent.stdout.close()
        self.assertRegex(line, r"^\d+$", "the parent printed no pid")
        child = int(line)
        self.addCleanup(lambda: dead(child) or os.kill(child, signal.SIGKILL))
        return child

    def assert_dies(self, child: int) -> None:
        deadline = time.monotonic() + 60   # it goes at once; a bound for a loaded machine
        while not dead(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(dead(child), f"pid {child} outlived its SIGKILLed parent by 60 s")

    def test_a_spawned_child_dies_with_its_killed_parent(self):
        self.assert_dies(self.child_of_a_killed_parent("spawn"))

    def test_qemu_dies_with_the_killed_test(self):
        self.assert_dies(self.child_of_a_killed_parent("qemu", str(elf_path("loops_forever_m4")), str(self.tmp)))

    def test_a_plain_child_outlives_it(self):
        """The check can fail: a child started without spawn() is still there."""
        self.assertFalse(dead(self.child_of_a_killed_parent("plain")))

    def test_only_from_the_main_thread(self):
        import threading
        raised = []
        def start():
            try:
                spawn(["true"]).wait()
            except RuntimeError as e:
                raised.append(e)
        thread = threading.Thread(target=start)
        thread.start()
        thread.join(timeout=60)
        self.assertEqual(len(raised), 1)

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="mcuprof-spawn-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)


class TruthPlugin(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="mcuprof-truth-"))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    def truth(self, name, **kw):
        path = self.tmp / f"{name}-{len(list(self.tmp.iterdir()))}.txt"
        res = qemu_runner.run_to_exit(elf_path(name), truth_path=path, plugin=PLUGIN, **kw)
        return read_counts(path), res

    def test_counts_are_exact(self):
        counts, res = self.truth("cost_m4")
        per_fn = by_function(counts, symbols("cost_m4"))
        work = 250000
        self.assertEqual(per_fn["hot_a"], 2 * (5 * work + 4))  # two calls of hot_a(250000)
        off = int(re.search(r"off=(\d+)", res.uart).group(1))
        # TIM2 agrees: the timed window is hot_a plus the few instructions around the clock reads
        self.assertLess(off - (5 * work + 4), 10)

    def test_counts_do_not_depend_on_translation_block_size(self):
        plain, _ = self.truth("tick_jit_m4")
        single, _ = self.truth("tick_jit_m4", singlestep=True)
        self.assertEqual(plain, single)

    def test_replay_repeats_the_recorded_run(self):
        rr = self.tmp / "rr.bin"
        rec, rec_res = self.truth("tick_jit_m4", record=rr)
        rep, rep_res = self.truth("tick_jit_m4", replay=rr)
        self.assertEqual(rec, rep)
        self.assertEqual(rec_res.uart, rep_res.uart)

    def test_uniform_cost_changes_no_count_and_snapshots_are_prefixes(self):
        # Uniform-cost mode (firmware-ref/truth/truth.c) only spends host time: the run and its
        # census are the same instruction for instruction. A snapshot taken mid-run counts a
        # prefix of the run: no address more often than the whole run, fewer in all.
        plain, _ = self.truth("calltree_o2_m4", singlestep=True)
        final = self.tmp / "uniform.txt"
        with qemu_runner.QemuRun(elf_path("calltree_o2_m4"), truth=final, plugin=PLUGIN, uart=None,
                                 uniform_cost_ns=1000, workdir=self.tmp / "uniform", timeout=600) as q:
            middle = q.snapshot()   # the first may come before the first instruction: empty
            while not middle:
                middle = q.snapshot()
            # The time census's stall column (truth.c, add_time) is a part of each time.
            times, stalls = q.snapshot_times(), q.snapshot_stalls()
            self.assertEqual(stalls.keys(), times.keys())
            self.assertTrue(all(stalls[address] <= ns for address, ns in times.items()), "a stall over its time")
            self.assertEqual(q.wait(), 0)
        self.assertEqual(read_counts(final), plain)
        self.assertTrue(middle, "an empty snapshot")
        self.assertTrue(all(n <= plain.get(address, 0) for address, n in middle.items()), "not a prefix")
        self.assertLess(sum(middle.values()), sum(plain.values()))
        window = qemu_runner.census_window(middle, plain)
        self.assertEqual(sum(window.values()) + sum(middle.values()), sum(plain.values()))


if __name__ == "__main__":
    unittest.main()
