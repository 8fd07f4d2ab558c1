"""`mcuprof record --chip NAME --probe stlink-server:PORT` (issue 53): mcuprof starts the real
OpenOCD with its stock interface/stlink.cfg and target/NAME.cfg, samples over its Tcl port and
stops it, against `mcuprof vprobe --chip NAME` in front of the QEMU machine that models the chip.

For each machine (the chips of test_stock_targets.py that pass OpenOCD's stock script over an
ST-Link's high-level commands), QEMU runs the truth plugin's uniform-cost mode (every
instruction 2000 ns of host time, so that a wall-clock halt lands in proportion to the
instructions executed, whichever link halts), and the same image is sampled twice: first
directly on QEMU's gdbstub (`record --gdb`), then with `--chip --probe` through the vprobe.
Asserted: both end by sample count, every function of at least 1 % agrees between the two
within 4 combined standard errors (independent samples 30 ms apart, 10 ms in the assembled loop:
thousands of instructions, many periods of each image's loop), the header names the OpenOCD that ran, no OpenOCD is left
and the guest runs on. Images: the never-ending reference images where the machine has one
(netduinoplus2, microbit), else a loop of three functions (12 instructions) assembled here.

The refusals, each one line with exit status 2, OpenOCD's log named and kept, no OpenOCD left,
the guest running: --chip nrf51 against a vprobe showing an STM32F4 (OpenOCD's UNEXPECTED
idcode); --chip stellaris over an ST-Link's high-level commands, which compare the SW-DP's ID
with the script's exactly and fail on the real Cortex-M3 r1 part as here. And mcuprof killed
(SIGKILL) mid-run takes its OpenOCD with it (PR_SET_PDEATHSIG); stopped with SIGINT it ends
the recording cleanly and stops OpenOCD. `top` and `swo` take the same pair. Ports are chosen at run time; every process started
is stopped on every path.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
import run_header
from openocd_rig import (CLI, FW_DIR, LOOP_START, OPENOCD, assemble_image, guest_running, qemu_machines, require,
                         stop_process)
from spawn import spawn

SAMPLES = 300
INTERVAL = "30ms"
LOOP_INTERVAL = "10ms"   # the assembled loop repeats every 12 instructions (24 us): 10 ms apart is independent
COST_NS = 2000
MIN_SHARE = 0.01

# chip: QEMU machine, the reference image (None: the loop below), the flash base, the core the
# loop is assembled for (the firmware check compares the ELF's architecture with CPUID).
CASES = {
    "stm32f4x": ("netduinoplus2", "mixed_forever_m4.elf", 0x08000000, None),
    "stm32f2x": ("netduino2", None, 0x08000000, "cortex-m3"),
    "stm32f1x": ("stm32vldiscovery", None, 0x08000000, "cortex-m3"),
    "stm32l4x": ("b-l475e-iot01a", None, 0x08000000, "cortex-m4"),
    "nrf51": ("microbit", "arch_forever_microbit.elf", 0x00000000, None),
}

# Three functions of 3, 2 and 7 instructions: 25, 17 and 58 % of a uniform-cost run.
LOOP_SOURCE = LOOP_START + """
    bl short_leaf
    bl long_leaf
    b loop
    .size loop, . - loop
    .thumb_func
    .type short_leaf, %function
short_leaf:
    adds r0, #1
    bx lr
    .size short_leaf, . - short_leaf
    .thumb_func
    .type long_leaf, %function
long_leaf:
    adds r1, #1
    subs r2, #1
    eors r3, r1
    adds r1, #2
    subs r2, #3
    eors r3, r2
    bx lr
    .size long_leaf, . - long_leaf
"""






def openocds_on(port: int) -> list[int]:
    """The OpenOCD processes whose command line names the st-link server port `port` (only the
    OpenOCD mcuprof started for this test's vprobe does)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if words and words[0].endswith(b"openocd") and f"hla_stlink_backend tcp {port}".encode() in words:
            found.append(int(entry.name))
    return found


def openocd_log(pid: int) -> Path:
    """Where mcuprof (process `pid`) keeps the log of the OpenOCD it started."""
    return Path(tempfile.gettempdir()) / f"mcuprof-openocd-{pid}.log"


def profile_rows(doc: dict) -> dict[str, int]:
    return {row["name"]: row["samples"] for row in doc["functions"] if row["samples"]}


class ChipProbe(unittest.TestCase):
    def setUp(self):
        require(["arm-none-eabi-as", "arm-none-eabi-ld", OPENOCD, qemu_runner.QEMU],
                [CLI, FW_DIR / "mixed_forever_m4.elf", FW_DIR / "arch_forever_microbit.elf"])
        self.work = Path(tempfile.mkdtemp(prefix="mcuprof-chip-probe-"))
        self.vprobe = None
        self.vprobe_log: list[str] = []

    def tearDown(self):
        stop_process(self.vprobe)
        if self.vprobe is not None:
            self.vprobe.stderr.close()

    def start_vprobe(self, q: qemu_runner.QemuRun, chip: str) -> int:
        self.vprobe = spawn([str(CLI), "vprobe", "--gdb", f"127.0.0.1:{q.gdb_port}", "--stlink-port", "0",
                             "--chip", chip], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
        first = self.vprobe.stderr.readline()
        self.vprobe_log.append(first)
        match = re.search(r"st-link on 127\.0\.0\.1:(\d+)", first)
        self.assertTrue(match, f"vprobe did not start: {first!r}")
        threading.Thread(target=lambda: self.vprobe_log.extend(self.vprobe.stderr), daemon=True).start()
        return int(match.group(1))

    def record(self, link: list[str], elf: Path, name: str, extra: tuple[str, ...] = (),
               interval: str = INTERVAL) -> subprocess.CompletedProcess:
        return self.record_like(["record", *link, "--samples", str(SAMPLES), "--interval", interval, "--seed", "7",
                                 *extra, "--elf", str(elf), "-o", str(self.work / name), "--format", "json"])

    def record_like(self, arguments: list[str]) -> subprocess.CompletedProcess:
        """mcuprof ARGUMENTS to its end, in a session of its own (it dies with the test)."""
        command = [str(CLI), *arguments]
        process = spawn(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.last_pid = process.pid
        try:
            out, err = process.communicate(timeout=600)
        finally:
            stop_process(process)
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    def qemu(self, elf: Path, machine: str) -> qemu_runner.QemuRun:
        return qemu_runner.QemuRun(elf, machine, gdb=True, qmp=True, truth=self.work / "truth.txt", uart=None,
                                   uniform_cost_ns=COST_NS, workdir=self.work, timeout=900)

    def assert_left_clean(self, q: qemu_runner.QemuRun, port: int) -> None:
        deadline = time.monotonic() + 10
        while openocds_on(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(openocds_on(port), [], "an OpenOCD mcuprof started is still running")
        self.assertEqual(self.vprobe.wait(timeout=10), 0, "".join(self.vprobe_log))   # its last client left
        deadline = time.monotonic() + 10
        while not guest_running(q) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(guest_running(q), "QEMU's guest does not run after mcuprof")

    def run_chip(self, chip: str):
        machine, image, flash, cpu = CASES[chip]
        if machine not in qemu_machines(qemu_runner.QEMU):
            self.skipTest(f"{qemu_runner.QEMU} ({'.'.join(map(str, qemu_runner.qemu_version()))}) has no "
                          f"machine {machine}: --chip {chip} cannot be tried here")
        elf = FW_DIR / image if image else assemble_image(self.work, LOOP_SOURCE, flash, cpu)
        with self.qemu(elf, machine) as q:
            q.wait_listening(q.gdb_port)
            interval = INTERVAL if image else LOOP_INTERVAL
            direct = self.record(["--gdb", f"127.0.0.1:{q.gdb_port}"], elf, "direct.rec", interval=interval)
            self.assertEqual(direct.returncode, 0, direct.stderr)
            port = self.start_vprobe(q, chip)
            started = self.record(["--chip", chip, "--probe", f"stlink-server:{port}", "--mode", "halt"], elf,
                                  "chip.rec", interval=interval)
            self.assertEqual(started.returncode, 0, started.stderr + "".join(self.vprobe_log))
            self.assert_left_clean(q, port)
        a, b = json.loads(direct.stdout), json.loads(started.stdout)
        self.assertEqual((a["samples"], b["samples"]), (SAMPLES, SAMPLES))
        rows_a, rows_b = profile_rows(a), profile_rows(b)
        self.assertNotIn("?", rows_b)
        print(f"\n--chip {chip} ({machine}): " + ", ".join(
            f"{name} {100 * rows_b.get(name, 0) / SAMPLES:.1f}/{100 * n / SAMPLES:.1f}"
            for name, n in sorted(rows_a.items(), key=lambda kv: -kv[1])[:6]) + " (% --chip/direct gdbstub)",
              flush=True)
        self.assertEqual(fwtest.apart_by_se(rows_b, rows_a, SAMPLES, min_share=MIN_SHARE, z=4.0), [])
        if image is None:   # the loop's shares are known: its functions' instruction counts
            expected = {"loop": 3 / 12, "short_leaf": 2 / 12, "long_leaf": 7 / 12}
            for rows in (rows_a, rows_b):
                self.assertEqual(fwtest.beyond_se(fwtest.fractions(rows, SAMPLES), expected, SAMPLES,
                                                  min_share=MIN_SHARE), [], rows)
        run = run_header.read_header(self.work / "chip.rec")["openocd_run"]
        self.assertEqual((run["chip"], run["probe"]), (chip, f"stlink-server:127.0.0.1:{port}"))
        self.assertIn(f"-f target/{chip}.cfg", run["command"])
        self.assertFalse(openocd_log(self.last_pid).exists(), "the log of a run that ended well is removed")

    def test_stm32f4x_netduinoplus2(self):
        self.run_chip("stm32f4x")

    def test_stm32f2x_netduino2(self):
        self.run_chip("stm32f2x")

    def test_stm32f1x_stm32vldiscovery(self):
        self.run_chip("stm32f1x")

    def test_stm32l4x_b_l475e_iot01a(self):
        self.run_chip("stm32l4x")

    def test_nrf51_microbit(self):
        self.run_chip("nrf51")

    def test_top_takes_the_same_pair(self):
        elf = FW_DIR / "mixed_forever_m4.elf"
        with self.qemu(elf, "netduinoplus2") as q:
            q.wait_listening(q.gdb_port)
            port = self.start_vprobe(q, "stm32f4x")
            rec = self.work / "top.rec"
            run = subprocess.run([str(CLI), "top", "--chip", "stm32f4x", "--probe", f"stlink-server:{port}",
                                  "--samples", "200", "--elf", str(elf), "-o", str(rec)],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assert_left_clean(q, port)
        shown = json.loads(subprocess.run([str(CLI), "report", str(rec), "--format", "json"], capture_output=True,
                                          text=True, check=True).stdout)
        self.assertEqual(shown["samples"], 200)
        self.assertEqual(run_header.read_header(rec)["openocd_run"]["chip"], "stm32f4x")

    def test_swo_takes_the_same_pair(self):
        """`swo --chip --probe` sets the DWT and ITM up through the OpenOCD it started and fails
        where `swo --openocd` fails in front of the vprobe (QEMU has no TPIU: OpenOCD's `tpiu
        enable` refuses, test_swo_openocd.py), in one line naming OpenOCD's log; OpenOCD is gone."""
        elf = FW_DIR / "mixed_forever_m4.elf"
        with self.qemu(elf, "netduinoplus2") as q:
            q.wait_listening(q.gdb_port)
            port = self.start_vprobe(q, "stm32f4x")
            run = self.record_like(["swo", "--chip", "stm32f4x", "--probe", f"stlink-server:{port}", "--elf", str(elf),
                                    "--cpu-hz", "168M", "--duration", "1s"])
            self.assertEqual(run.returncode, 2, run.stderr)
            last = run.stderr.strip().splitlines()[-1]
            self.assertRegex(last, r"tpiu enable: OpenOCD cannot start the SWO capture: .*DEMCR 0x01000000.*"
                                   r"; its log: \S+$")
            self.assertIn(f"its log: {openocd_log(self.last_pid)}", last)
            openocd_log(self.last_pid).unlink()
            self.assert_left_clean(q, port)

    def refused(self, shown: str, asked: str, machine: str, elf: Path, words: str) -> None:
        with self.qemu(elf, machine) as q:
            q.wait_listening(q.gdb_port)
            port = self.start_vprobe(q, shown)
            run = self.record(["--chip", asked, "--probe", f"stlink-server:{port}"], elf, "refused.rec")
            self.assertEqual(run.returncode, 2, run.stderr)
            lines = run.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, run.stderr)
            self.assertIn(words, lines[0])
            self.assertIn(f"its log: {openocd_log(self.last_pid)}", lines[0])
            self.assertIn("UNEXPECTED idcode", openocd_log(self.last_pid).read_text())
            openocd_log(self.last_pid).unlink()
            self.assert_left_clean(q, port)

    def test_another_chip_is_refused(self):
        self.refused("stm32f4x", "nrf51", "netduinoplus2", FW_DIR / "mixed_forever_m4.elf",
                     "UNEXPECTED idcode: 0x2ba01477")

    def test_stellaris_over_the_high_level_commands_is_refused(self):
        if "lm3s6965evb" not in qemu_machines(qemu_runner.QEMU):
            self.skipTest("no lm3s6965evb machine in this QEMU")
        self.refused("stellaris", "stellaris", "lm3s6965evb", assemble_image(self.work, LOOP_SOURCE, 0, "cortex-m3"),
                     "another part's ID")

    def interrupted(self, how: signal.Signals) -> None:
        elf = FW_DIR / "mixed_forever_m4.elf"
        with self.qemu(elf, "netduinoplus2") as q:
            q.wait_listening(q.gdb_port)
            port = self.start_vprobe(q, "stm32f4x")
            rec = self.work / "stopped.rec"
            process = spawn([str(CLI), "record", "--chip", "stm32f4x", "--probe", f"stlink-server:{port}",
                             "--elf", str(elf), "-o", str(rec)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                deadline = time.monotonic() + 120
                while (not rec.exists() or rec.stat().st_size < 4096) and time.monotonic() < deadline:
                    self.assertIsNone(process.poll(), process.stderr.read() if process.poll() is not None else "")
                    time.sleep(0.05)
                self.assertEqual(len(openocds_on(port)), 1)
                process.send_signal(how)
                process.wait(timeout=60)
            finally:
                stop_process(process)
            if how == signal.SIGINT:
                self.assertEqual(process.returncode, 0, process.stderr.read())
                shown = subprocess.run([str(CLI), "report", str(rec)], capture_output=True, text=True)
                self.assertEqual(shown.returncode, 0, shown.stderr)
            self.assert_left_clean(q, port) if how == signal.SIGINT else self.assert_openocd_gone(port)

    def assert_openocd_gone(self, port: int) -> None:
        deadline = time.monotonic() + 10
        while openocds_on(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(openocds_on(port), [], "mcuprof was killed and its OpenOCD still runs")

    def test_ctrl_c_stops_openocd(self):
        self.interrupted(signal.SIGINT)

    def test_killed_mcuprof_takes_openocd_along(self):
        self.interrupted(signal.SIGKILL)


if __name__ == "__main__":
    unittest.main()
