"""mcuprof record --openocd through the OpenOCD rig (openocd_rig), checked against the truth
plugin: the test classes each probe's test module runs on its own rig (test_record_openocd:
JTAG; test_record_stlink: an ST-Link over SWD), and the helpers they share (the truth read per
function, the 4-standard-error checks, the command line, waiting for samples). The bounds are
explained in test_record_openocd's docstring."""
from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import tempfile
import time
import re
import unittest
from pathlib import Path

import fwtest
from openocd_rig import (CLI, ELF, OPENOCD, UNIFORM_COST_NS, elf_functions, guest_running, require, shut_down_openocd,
                         start_rig, stop_rig)
from qemu_runner import census_window
from spawn import spawn

Z = 4.0
SAMPLES = {"halt": 200, "pcsr": 1000}
# The rigs run the truth plugin's uniform-cost mode (UNIFORM_COST_NS a guest instruction), and
# each recording is held against the time census of its own window (windowed()). The binomial
# bound needs samples that are independent draws from the workload: the waits are exponential,
# with a mean of 100 ms (50 000 instructions at most, three rounds of the workload of about
# 15 000), so the phase of the workload at each halt is random. Between two PCSR batches too.
HALT_INTERVAL = ("--interval", "100ms")
PCSR_BATCH = 16
PCSR_INTERVAL = ("--interval", "100ms")


def by_function(counts: dict[int, int], functions: dict[str, tuple[int, int]]) -> dict[str, int]:
    ranges = sorted((start, end, name) for name, (start, end) in functions.items())
    out: dict[str, int] = {}
    for pc, n in counts.items():
        for start, end, name in ranges:
            if start <= pc < end:
                out[name] = out.get(name, 0) + n
                break
    return out


def windowed(rig, command: list[str], timeout: float) -> tuple[subprocess.CompletedProcess, dict[str, int], dict[str, int]]:
    """Runs `command` against the rig (QEMU at uniform cost) between two census snapshots:
    its result, the time census of its window by function (host ns in which a wall-clock halt
    would have stopped in each: the reference for halts and PCSR reads on a loaded host too,
    which the instruction counts are not; docs/firmware-ref.md, "The time census"), and that
    census less its stalls (fwtest.stall_free_census): a sampler that waits for its own halts,
    as every one through this rig does, finds a stall of QEMU's vCPU thread at most once, and is
    held to the interval between the two (fwtest.beyond_se's stall_free)."""
    before = rig.qemu.snapshot_census()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    census, stalls = window_census(before, rig.qemu.snapshot_census())
    total = sum(census.values())
    print("\nthe window's time census (of it in stalls over 20 us): " + ", ".join(
        f"{name} {100 * census[name] / total:.2f} % ({100 * stalls.get(name, 0) / total:.2f})"
        for name in hottest(census, 8)), file=sys.stderr)
    return result, census, fwtest.stall_free_census(census, stalls)


def window_census(before, after) -> tuple[dict[str, int], dict[str, int]]:
    """The time census of the window between two snapshot_census() snapshots of the rig's
    QEMU, and the stalls in it, each by function of ELF."""
    functions = elf_functions(ELF)
    return (by_function(census_window(before[1], after[1]), functions),
            by_function(census_window(before[2], after[2]), functions))


def read_truth(path: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("0x"):
            counts[int(parts[0], 16)] = counts.get(int(parts[0], 16), 0) + int(parts[1])
    return counts


def hottest(shares: dict[str, float], n: int) -> list[str]:
    return [k for k, _ in sorted(shares.items(), key=lambda kv: -kv[1])[:n]]


def shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()}


def halt_profile_checks(test: unittest.TestCase, observed: dict[str, float], truth_counts: dict[str, int],
                        samples: int, stall_free: dict[str, int] | None = None) -> None:
    """A halting profile of `samples` samples against the census of its window (with
    `stall_free`, a time census and that census less its stalls: windowed()). The three hot
    functions (27-38 % each in the truth, the rest under 2 %) are the truth's three, in any
    order: 200 samples do not separate shares 6 points apart reliably; every function of 5 % or
    more is within Z standard errors."""
    truth = shares(truth_counts)
    print(f"\nobserved {json.dumps({k: round(v, 3) for k, v in observed.items()})}\n"
          f"truth {json.dumps({k: round(v, 3) for k, v in truth.items() if v > 0.005})}", file=sys.stderr)
    test.assertEqual(set(hottest(observed, 3)), set(hottest(truth, 3)))
    test.assertEqual(fwtest.beyond_se(observed, truth, samples, min_share=0.05, z=Z,
                                      stall_free=None if stall_free is None else shares(stall_free)), [])


def pcsr_profile_checks(test: unittest.TestCase, doc: dict, samples: int, batch: int, truth_counts: dict[str, int],
                        stall_free: dict[str, int]) -> None:
    """A DWT_PCSR profile (the JSON report `doc` of `samples` reads in batches of `batch`)
    against the census of its window. The reads of a batch are correlated (the core barely runs
    between them), so the report's standard errors come from the spread between the batches
    (docs/live.md, "Error bars of correlated reads"), and every function of the window's truth
    of 1 % or more holds within Z of them. The batches are separated by random waits. The truth
    is the interval between the window's time census and that census less its stalls: each read
    is a halt that waits out a stall of QEMU's vCPU thread and then lands once (windowed();
    tests/vprobe/test_stall_census.py)."""
    test.assertEqual(doc["errors"]["method"], "bursts")
    test.assertEqual(doc["errors"]["bursts"], math.ceil(samples / batch))
    truth = shares(truth_counts)
    print(f"\npcsr: errors {doc['errors']}", file=sys.stderr)
    # The standard errors: the binomial one at the true share times the report's own ratio
    # for that row (its burst error over its binomial one); a row it lacks, its largest.
    observed = {row["name"]: row["percent"] / 100 for row in doc["functions"]}
    ratios, largest = fwtest.burst_ratios(doc)
    test.assertEqual(fwtest.beyond_se(observed, truth, doc["samples"], min_share=0.01, z=Z, ratios=ratios,
                                      default_ratio=largest, stall_free=shares(stall_free)), [])


def observed_shares(test: unittest.TestCase, report: dict, samples: int, truth_counts: dict[str, int]):
    """The shares of a JSON report of `samples` samples, each PC inside a function of the ELF."""
    test.assertEqual(report["samples"], samples)
    rows = {row["name"]: row["samples"] for row in report["functions"]}
    test.assertEqual(sum(rows.values()), samples, rows)   # nothing left unattributed
    test.assertTrue(all(name in truth_counts for name, n in rows.items() if n), (rows, truth_counts))
    return {k: v / samples for k, v in rows.items() if v}


def debug_state(tcl) -> dict:
    """What a recording must leave as it found it: DHCSR's control bits (C_DEBUGEN, C_HALT,
    C_STEP, C_MASKINTS, C_SNAPSTALL: bits 5:0; the status bits change as the core runs), DFSR,
    DEMCR (ARMv7-M ARM C1.6), and whether OpenOCD polls the target."""
    def word(address):
        return int(tcl.run(f"read_memory {address} 32 1").split()[0], 0)
    return {"dhcsr_controls": word(0xE000EDF0) & 0x2F, "dfsr": word(0xE000ED30), "demcr": word(0xE000EDFC),
            "polling": "background polling: on" in tcl.raw("poll")}


def record(tcl_port: int, mode: str, *options: str, rec: Path) -> list[str]:
    """The command line of a recording through OpenOCD of ELF into `rec`, JSON profile."""
    return [str(CLI), "record", "--openocd", f"127.0.0.1:{tcl_port}", "--mode", mode, *options, "--elf", str(ELF),
            "-o", str(rec), "--format", "json"]


class RecordThroughOpenOCD(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-openocd-"))
        try:
            cls._run()
        finally:
            cls._stop()

    @classmethod
    def _run(cls):
        start_rig(cls, ELF, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS)
        tcl_port = cls.tcl_port

        cls.results = {}
        cls.windows = {}
        cls.stall_free = {}
        cls.debug_state = {}
        for mode, options in (("halt", HALT_INTERVAL), ("pcsr", ("--batch", str(PCSR_BATCH), *PCSR_INTERVAL))):
            rec = cls.work / f"{mode}.rec"
            before = debug_state(cls.tcl)
            r, cls.windows[mode], cls.stall_free[mode] = windowed(
                cls, record(tcl_port, mode, "--samples", str(SAMPLES[mode]), *options, rec=rec), timeout=600)
            state = cls.tcl.run("[target current] curstate").strip()
            cls.results[mode] = (r, rec, state)
            cls.debug_state[mode] = (before, debug_state(cls.tcl))
            print(f"\nrecord --openocd --mode {mode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}",
                  file=sys.stderr)

        # mcuprof top through the same OpenOCD (the record command's sources): plain tables.
        cls.top, cls.windows["top"], cls.stall_free["top"] = windowed(
            cls, [str(CLI), "top", "--openocd", f"127.0.0.1:{tcl_port}", "--mode", "pcsr", "--samples", "1000",
                  *PCSR_INTERVAL, "--refresh", "200ms", "--rows", "0", "--elf", str(ELF), "-o", str(cls.work / "top.rec")],
            timeout=600)
        cls.top_state = cls.tcl.run("[target current] curstate").strip()
        cls.top_report = report_json(cls.work / "top.rec") if cls.top.returncode == 0 else None

        # Ctrl-C in the middle of a halt-mode recording: it ends, reports, leaves the target running.
        rec = cls.work / "sigint.rec"
        p = spawn(record(tcl_port, "halt", "--samples", "10000000", rec=rec),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_samples(p, rec, 5)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        cls.sigint = (p.returncode, out, err, cls.tcl.run("[target current] curstate").strip(), report_json(rec))

        # Someone else halts the core in the middle of a halt-mode recording (OpenOCD's own
        # `halt`, as a GDB user's would): the next sample finds it halted, leaves it so and
        # ends the recording; then it is resumed for what follows.
        rec = cls.work / "other.rec"
        p = spawn(record(tcl_port, "halt", "--samples", "10000000", rec=rec),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_samples(p, rec, 5)
        cls.tcl.run("halt")
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        # `poll` as it is, not inside `capture`, which returns the log it caught (the halted
        # target's state) instead of the command's result when there is any.
        cls.other_halt = (p.returncode, err, cls.tcl.run("[target current] curstate").strip(),
                          cls.tcl.raw("poll").strip())
        cls.tcl.run("resume")

        # OpenOCD and the vprobe leave; QEMU then says whether its guest runs.
        shut_down_openocd(cls)
        cls.guest_running = guest_running(cls.qemu)
        cls.qemu.stop()

    @classmethod
    def _stop(cls):
        stop_rig(cls)

    def profile(self, mode: str) -> dict[str, float]:
        r, rec, state = self.results[mode]
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(state, "running", f"OpenOCD sees the target {state} after --mode {mode}")
        return observed_shares(self, json.loads(r.stdout), SAMPLES[mode], self.windows[mode])

    def test_top_through_openocd(self):
        self.assertEqual(self.top.returncode, 0, self.top.stderr)
        self.assertEqual(self.top_state, "running")
        last = [l for l in self.top.stdout.splitlines() if l.startswith("top ")][-1]
        self.assertIn("(end: sample count reached): 1000 samples", last)
        rows, errors = {}, {}
        for line in self.top.stdout.split(last)[1].strip().splitlines()[1:]:
            pct, se, _, name = line.split(None, 3)
            rows[name] = float(pct) / 100
            errors[name] = (float(pct), float(se))
        self.assertEqual(set(hottest(rows, 3)), set(hottest(shares(self.windows["top"]), 3)))
        # PCSR batches are bursts of correlated reads: top's errors come from the spread between
        # them and are report's for the same samples (its samples file), to the 0.01 it prints.
        doc = self.top_report
        self.assertEqual(doc["errors"]["method"], "bursts")
        self.assertIn(f"errors from the spread between {doc['errors']['bursts']} bursts", last)
        reported = {row["name"]: (row["percent"], row["stderr"]) for row in doc["functions"]}
        compared = [name for name in errors if name in reported]
        self.assertGreaterEqual(len(compared), 3, (errors, reported))
        for name in compared:
            for shown, exact in zip(errors[name], reported[name]):
                self.assertAlmostEqual(shown, exact, delta=0.0051, msg=f"{name}: top {errors[name]}, report {reported[name]}")

    def test_guest_still_running(self):
        self.assertTrue(self.guest_running, "the guest is not running after the recordings")

    def test_sigint_ends_the_recording_and_leaves_the_target_running(self):
        code, out, err, state, doc = self.sigint
        self.assertEqual(code, 0, err)
        self.assertIn("interrupted by a signal", err)
        self.assertGreater(json.loads(out)["samples"], 0)
        self.assertEqual(state, "running")
        # No sample lost: the file holds every sample the summary line announced.
        said = int(re.search(r"mcuprof record: (\d+) samples in ", err).group(1))
        self.assertEqual(doc["samples"], said)
        self.assertEqual(json.loads(out)["samples"], said)

    def test_halt_mode_leaves_the_debug_registers_and_openocd_as_found(self):
        # DHCSR's control bits, DFSR and DEMCR as before the recording, OpenOCD's polling on
        # again (it was on), its view "running" (profile() checks curstate).
        self.profile("halt")
        before, after = self.debug_state["halt"]
        self.assertEqual(after, before)
        self.assertTrue(before["polling"], before)

    def test_a_core_halted_by_someone_else_is_left_halted(self):
        code, err, state, poll = self.other_halt
        self.assertEqual(code, 0, err)
        self.assertIn("halted by someone else", err)
        self.assertEqual(state, "halted")
        self.assertIn("background polling: on", poll)

    def test_halt_mode_within_4_se_of_the_truth(self):
        halt_profile_checks(self, self.profile("halt"), self.windows["halt"], SAMPLES["halt"], self.stall_free["halt"])

    def test_pcsr_mode_within_4_of_its_own_standard_errors(self):
        r, _, _ = self.results["pcsr"]
        self.profile("pcsr")   # every read in a function of the ELF
        pcsr_profile_checks(self, json.loads(r.stdout), SAMPLES["pcsr"], PCSR_BATCH, self.windows["pcsr"],
                            self.stall_free["pcsr"])

    def test_the_virtual_probe_is_known_and_its_bias_warned_of(self):
        # The vprobe's two words in the ROM table (mcuprof/vprobe_signature.h) come through
        # OpenOCD: the header names the probe, and every report warns of QEMU's wall clock.
        for mode in ("halt", "pcsr"):
            r, _, _ = self.results[mode]
            self.assertIn("mcuprof record: warning: behind OpenOCD is mcuprof's virtual probe", r.stderr)
            kinds = [w["kind"] for w in json.loads(r.stdout)["warnings"]]
            self.assertIn("emulator-bias", kinds, mode)

    def test_pcsr_summary_tells_batches_not_halts(self):
        # pcsr mode never halts: its figures are the batches' round trips and the reads that
        # found the core halted, not a halt latency.
        r, rec, _ = self.results["pcsr"]
        summary = r.stderr.strip().splitlines()[-1]
        self.assertIn(f"DWT_PCSR read {PCSR_BATCH} times per round trip", summary)
        self.assertNotIn("halt latency", summary)
        sampler = json.loads(r.stdout)["sampler"]
        self.assertNotIn("halt_latency_us", sampler)
        pcsr = sampler["pcsr"]
        self.assertEqual(pcsr["batch"], PCSR_BATCH)
        self.assertEqual(pcsr["halted_reads"], 0)   # nobody halted the core
        self.assertEqual(pcsr["reads"] - pcsr["halted_reads"], SAMPLES["pcsr"])
        self.assertEqual(pcsr["batches"], math.ceil(SAMPLES["pcsr"] / PCSR_BATCH))

def report_json(rec: Path) -> dict:
    r = subprocess.run([str(CLI), "report", str(rec), "--elf", str(ELF), "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"mcuprof report {rec} failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)


def samples_in(rec: Path) -> int:
    """The samples of a recording being written (0 until it holds one)."""
    r = subprocess.run([str(CLI), "report", str(rec), "--elf", str(ELF), "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    return json.loads(r.stdout)["samples"] if r.returncode == 0 else 0


def wait_for_samples(p: subprocess.Popen, rec: Path, count: int, limit: float = 180.0) -> None:
    """Until a recording that runs until stopped holds `count` samples. `limit` is far above
    what a few dozen halt round trips through OpenOCD and the vprobe take on a slow, loaded
    machine (about 25 ms each here)."""
    deadline = time.monotonic() + limit
    while samples_in(rec) < count:
        if p.poll() is not None:
            raise AssertionError(f"record ended before {count} samples: {p.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {count} samples in {rec} within {limit:.0f} s")
        time.sleep(0.2)


class WithoutPcsrThenOpenOCDKilled(unittest.TestCase):
    """The vprobe models a part built without the DWT (`--no-dwt`: DWT_PCSR reads 0):
    `record --mode pcsr` refuses it before the first sample (exit 2, one line, the target
    running); `--mode pcsr,halt` says so, falls back to halting and still gets the truth's
    profile. Then OpenOCD is killed (SIGKILL) in the middle of a recording:
    mcuprof ends with one line and exit code 3, the samples file reads back with every sample
    it said it wrote, and the guest runs on (the vprobe, left by OpenOCD, detaches)."""

    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-openocd-"))
        try:
            cls._run()
        finally:
            stop_rig(cls)

    @classmethod
    def _run(cls):
        start_rig(cls, ELF, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS,
                  vprobe_options=("--no-dwt",))
        refused = subprocess.run(record(cls.tcl_port, "pcsr", "--samples", "10", rec=cls.work / "refused.rec"),
                                 capture_output=True, text=True, timeout=600)
        cls.refused = (refused, cls.tcl.run("[target current] curstate").strip())
        rec = cls.work / "fallback.rec"
        result, cls.truth, cls.truth_stall_free = windowed(cls, record(cls.tcl_port, "pcsr,halt", "--samples", str(SAMPLES["halt"]),
                                                 *HALT_INTERVAL, rec=rec), timeout=600)
        cls.fallback = (result, rec)

        # OpenOCD killed while a halt-mode recording runs: wait until the file holds samples.
        rec = cls.work / "killed.rec"
        p = spawn(record(cls.tcl_port, "halt", "--samples", "10000000", rec=rec),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for_samples(p, rec, 20)
            cls.openocd.kill()   # SIGKILL
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        cls.killed = (p.returncode, out, err, report_json(rec))   # the rig's folder goes at the end
        print(f"\nOpenOCD killed during a recording: exit {p.returncode}\n{err}", file=sys.stderr)
        cls.tcl.close()
        cls.tcl = None
        cls.openocd.wait(timeout=10)
        cls.vprobe_code = cls.vprobe.wait(timeout=10)
        cls.vprobe_reader.join(timeout=5)
        cls.guest_running = guest_running(cls.qemu)
        cls.qemu.stop()

    def test_pcsr_absent_is_refused_with_one_line_the_target_running(self):
        r, state = self.refused
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^mcuprof record: openocd tcl 127\.0\.0\.1:\d+, --mode pcsr: DWT_PCSR reads 0 on "
                                   r"target \S+ \(Cortex-M4, CPUID 0x410fc24\d; .*\): --mode halt samples it by "
                                   r"halting, --mode pcsr,halt falls back by itself$")
        self.assertEqual(state, "running")

    def test_pcsr_absent_falls_back_to_halting_with_a_notice(self):
        r, rec = self.fallback
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("DWT_PCSR reads 0", r.stderr)
        self.assertIn("sampling in halt mode instead (--mode pcsr,halt)", r.stderr)
        doc = json.loads(r.stdout)
        self.assertIn("halt_latency_us", doc["sampler"])   # it halted
        self.assertNotIn("pcsr", doc["sampler"])
        halt_profile_checks(self, observed_shares(self, doc, SAMPLES["halt"], self.truth), self.truth,
                            SAMPLES["halt"], self.truth_stall_free)

    def test_openocd_killed_leaves_a_readable_file_and_one_line(self):
        code, out, err, doc = self.killed
        self.assertEqual(code, 3, err)
        last = err.strip().splitlines()[-1]
        self.assertRegex(last, r"^mcuprof record: stopped early, the link was lost: .*; the \d+ samples recorded "
                               r"are in ")
        said = int(re.search(r"the (\d+) samples recorded", last).group(1))
        self.assertGreater(said, 0)
        self.assertEqual(doc["samples"], said)   # no sample lost between mcuprof and its file
        self.assertEqual(json.loads(out)["samples"], said)
        self.assertTrue(doc["sampler"]["link_lost"])

    def test_the_guest_runs_after_openocd_was_killed(self):
        self.assertEqual(self.vprobe_code, 0, "".join(self.vprobe_log))
        self.assertIn("OpenOCD disconnected", "".join(self.vprobe_log))
        self.assertTrue(self.guest_running, "the guest is not running after OpenOCD was killed")
