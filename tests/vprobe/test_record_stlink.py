"""`mcuprof record --openocd` through an ST-Link over SWD: the rigs and checks of
test_record_openocd.py (halt mode within 4 standard errors of the truth plugin, pcsr mode's hot
functions, `top`, SIGINT, a core without DWT_PCSR, OpenOCD killed) with OpenOCD's st-link
driver in front of `mcuprof vprobe --stlink-port` (configs/openocd/qemu-stlink.cfg), on both
transports; DWT_PCSR through OpenOCD's `profile` chunks; halt mode under a halted-share budget
(--max-halted) with the probe's latency; and one more end: the probe link dropped in the middle
of a recording (the TCP connection between OpenOCD and the probe cut by a proxy, as a USB
cable pulled out), on both transports.

Checked for the dropped link: the recording ends by itself with exit code 3 and one line
saying the link was lost, every sample it said it recorded is in its file, the vprobe sees
OpenOCD go, detaches and exits 0, and the guest runs on. The image never ends (mixed_forever_m4); recordings end by
sample count, or by the fault.

Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import openocd_record_suite  # as a module: its classes are not collected here
from fault_proxy import FaultProxy, Faults
import fwtest
from openocd_rig import (CLI, ELF, OPENOCD, UNIFORM_COST_NS, elf_functions, guest_running, require, shut_down_openocd,
                         start_rig, stop_rig)
from spawn import spawn


def record_against_truth(rig, mode_and_options: tuple[str, ...], timeout: float,
                         vprobe_options: tuple[str, ...] = ()) -> None:
    """One recording through the rig's ST-Link (-singlestep, the truth plugin), then OpenOCD
    and QEMU shut down. Sets on `rig`: result (the record run), state (OpenOCD's curstate
    after it), truth (instructions by function)."""
    require((OPENOCD, "arm-none-eabi-nm"), (CLI, ELF))
    rig.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
    try:
        truth = rig.work / "truth.txt"
        start_rig(rig, ELF, truth=truth, singlestep=True, vprobe_options=vprobe_options)
        rig.result = subprocess.run(openocd_record_suite.record(rig.tcl_port, *mode_and_options, rec=rig.work / "samples.rec"),
                                    capture_output=True, text=True, timeout=timeout)
        rig.state = rig.tcl.run("[target current] curstate").strip()
        shut_down_openocd(rig)
        rig.qemu.stop()
        rig.truth = openocd_record_suite.by_function(openocd_record_suite.read_truth(truth), elf_functions(ELF))
    finally:
        stop_rig(rig)


def profile_reads(test: unittest.TestCase, stderr: str) -> tuple[int, int, int]:
    """The closing event of a `--pcsr-read profile` recording: the DWT_PCSR reads OpenOCD's
    profile made, those outside the window, those placing it or past the count."""
    reads = re.search(r"OpenOCD's profile read DWT_PCSR (\d+) times: (\d+) outside .*, (\d+) placing", stderr)
    test.assertIsNotNone(reads, stderr)
    return tuple(map(int, reads.groups()))


class RecordThroughStlinkDapDirect(openocd_record_suite.RecordThroughOpenOCD):
    stlink_transport = "dapdirect_swd"


class RecordThroughStlinkHla(openocd_record_suite.RecordThroughOpenOCD):
    stlink_transport = "hla_swd"


class WithoutPcsrThenOpenOCDKilledStlink(openocd_record_suite.WithoutPcsrThenOpenOCDKilled):
    stlink_transport = "dapdirect_swd"


class PcsrThroughProfileChunks(unittest.TestCase):
    """`--mode pcsr --pcsr-read profile` through dapdirect_swd: DWT_PCSR read by OpenOCD's own
    `profile` in chunks of 1024 (docs/live.md). Exactly the samples asked for, every one inside
    a function the truth saw execute, the reads accounted for in the closing event, the target
    left running."""
    stlink_transport = "dapdirect_swd"
    SAMPLES = 2048

    @classmethod
    def setUpClass(cls):
        record_against_truth(cls, ("pcsr", "--pcsr-read", "profile", "--samples", str(cls.SAMPLES)), timeout=300)

    def test_the_samples_and_their_hot_functions(self):
        r = self.result
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.state, "running")
        print(f"\n{r.stderr.strip()}", file=sys.stderr)
        # Every sample inside a function the truth saw execute. No share bound: the 1024 reads
        # of a chunk follow one another back to back, so the chunks (2 here), not the reads,
        # are the independent samples (see test_record_openocd.py's pcsr bounds).
        openocd_record_suite.observed_shares(self, json.loads(r.stdout), self.SAMPLES, self.truth)
        total, outside, unused = profile_reads(self, r.stderr)
        self.assertEqual(total - outside - unused, self.SAMPLES)
        # The summary tells the chunks as they are: 1024 reads a round trip, the same reads.
        pcsr = json.loads(r.stdout)["sampler"]["pcsr"]
        self.assertEqual((pcsr["batch"], pcsr["reads"], pcsr["unused_reads"]), (1024, total, outside + unused))
        self.assertIn(f"DWT_PCSR read 1024 times per round trip", r.stderr.strip().splitlines()[-1])
        self.assertIn(f"{outside + unused} of {total} reads unused", r.stderr.strip().splitlines()[-1])


class PcsrThroughLongProfileCalls(unittest.TestCase):
    """`--mode pcsr --pcsr-read profile` with the chunks sized by time (the default): each
    `profile` call gathers up to the 10000 reads OpenOCD allows a call, so a call's fixed
    commands are a small share. The recording ends by sample count with exactly the samples
    asked for, the calls were longer than a pass of 1024, the reads are accounted for, and the
    three hottest functions are the truth's. No share bound: a chunk's reads follow one another
    back to back, so only the chunks are independent samples, and a recording of 30000 reads
    is three chunks of 10000 when each call reaches the cap; a bound with n = 3 could not fail
    (what `profile` reads is OpenOCD's, the same reads as a hand-run `profile`)."""
    stlink_transport = "dapdirect_swd"
    SAMPLES = 30000

    @classmethod
    def setUpClass(cls):
        record_against_truth(cls, ("pcsr", "--pcsr-read", "profile", "--interval", "1ns",
                                   "--samples", str(cls.SAMPLES)), timeout=600)

    def test_long_calls_end_by_sample_count(self):
        r = self.result
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.state, "running")
        print(f"\n{r.stderr.strip()}", file=sys.stderr)
        last = r.stderr.strip().splitlines()[-1]
        self.assertIn(f"mcuprof record: {self.SAMPLES} samples in ", last)
        self.assertIn("sample count reached", last)
        pcsr = json.loads(r.stdout)["sampler"]["pcsr"]
        total, outside, unused = profile_reads(self, r.stderr)
        self.assertEqual(total - outside - unused, self.SAMPLES)
        self.assertEqual((pcsr["reads"], pcsr["unused_reads"]), (total, outside + unused))
        # Sized by time: fewer calls than passes of 1024, each at most OpenOCD's 10000.
        self.assertLess(pcsr["batches"], self.SAMPLES / 1024)
        self.assertGreater(pcsr["batch"], 1024)
        self.assertLessEqual(pcsr["batch"], 10000)

    def test_the_hot_functions_are_the_truths(self):
        report = json.loads(self.result.stdout)
        observed = openocd_record_suite.observed_shares(self, report, self.SAMPLES, self.truth)
        truth = openocd_record_suite.shares(self.truth)
        chunks = report["sampler"]["pcsr"]["batches"]
        print(f"\nprofile chunks ({chunks}): observed {json.dumps({k: round(v, 3) for k, v in observed.items()})}, "
              f"truth {json.dumps({k: round(v, 3) for k, v in truth.items() if v >= 0.01})}", file=sys.stderr)
        self.assertEqual(set(openocd_record_suite.hottest(observed, 3)), set(openocd_record_suite.hottest(truth, 3)))


class PcsrProfileChunksInterrupted(unittest.TestCase):
    """Ctrl-C in the middle of a `--pcsr-read profile` recording: it ends when the running
    `profile` call returns (within one chunk), exit code 0, every sample it announced in its
    file, the target running and OpenOCD's background polling, held off during the recording,
    on again."""
    stlink_transport = "dapdirect_swd"

    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
        try:
            start_rig(cls, ELF)
            rec = cls.work / "sigint.rec"
            p = spawn(openocd_record_suite.record(cls.tcl_port, "pcsr", "--pcsr-read", "profile", "--samples", "100000000",
                                  rec=rec), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                openocd_record_suite.wait_for_samples(p, rec, 1)   # a chunk is in: the next call runs
                p.send_signal(signal.SIGINT)
                # Generous: a call lasts at most 10 s and a pass beyond (docs/live.md).
                out, err = p.communicate(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
            cls.interrupted = (p.returncode, out, err, openocd_record_suite.report_json(rec))
            cls.state = cls.tcl.run("[target current] curstate").strip()
            cls.polling = cls.tcl.run("poll")
        finally:
            stop_rig(cls)

    def test_it_ends_with_every_sample_and_openocd_as_found(self):
        code, out, err, doc = self.interrupted
        print(f"\n{err.strip()}", file=sys.stderr)
        self.assertEqual(code, 0, err)
        self.assertIn("interrupted by a signal", err)
        said = int(re.search(r"mcuprof record: (\d+) samples in ", err).group(1))
        self.assertGreater(said, 0)
        self.assertEqual(doc["samples"], said)
        self.assertEqual(json.loads(out)["samples"], said)
        self.assertEqual(self.state, "running")
        self.assertIn("background polling: on", self.polling)


class HaltedShareBudget(unittest.TestCase):
    """`--mode halt --max-halted 50` through dapdirect_swd with the probe's latency at 125 us a
    command (an STLINK-V3 at USB high speed), where a halt costs OpenOCD hundreds of commands:
    the waits are set by the budget, not by the 1 ns interval asked for.

    The bound (docs/live.md, "A budget for the halted share"): each wait makes up what the one
    before fell short, so the halted time exceeds B of the wall time by at most (1 - B) x the
    longest halt + B x the largest mean wait, both in the recording's summary. The shares are
    within 4 standard errors of the truth, as halt mode's are without a budget."""
    stlink_transport = "dapdirect_swd"
    SAMPLES = 200
    BUDGET = 0.5   # half the time running: 200 samples take 400 halts' time, minutes under load

    @classmethod
    def setUpClass(cls):
        record_against_truth(cls, ("halt", "--interval", "1ns", "--max-halted", str(round(100 * cls.BUDGET)),
                                   "--samples", str(cls.SAMPLES)), timeout=900, vprobe_options=("--latency", "125us"))

    def test_the_halted_share_stays_under_the_budget(self):
        r = self.result
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.state, "running")
        print(f"\n{r.stderr.strip()}", file=sys.stderr)
        sampler = json.loads(r.stdout)["sampler"]
        budget = sampler["halt_budget"]
        self.assertEqual(budget["max_halted"], self.BUDGET)
        wall = sampler["wall_seconds"]
        halted = wall * (1 - sampler["run_duty"])
        bound = self.BUDGET * wall + (1 - self.BUDGET) * budget["longest_halt_seconds"] + \
            self.BUDGET * budget["longest_mean_wait_seconds"]
        self.assertLessEqual(halted, bound, sampler)
        last = r.stderr.strip().splitlines()[-1]
        self.assertIn(f"halted {100 * (1 - sampler['run_duty']):.1f} %, budget {100 * self.BUDGET:.1f} %", last)

    def test_shares_within_4_se_of_the_truth(self):
        openocd_record_suite.halt_profile_checks(self, openocd_record_suite.observed_shares(self, json.loads(self.result.stdout), self.SAMPLES,
                                                            self.truth), self.truth, self.SAMPLES)


class StalledQemu(unittest.TestCase):
    """What a stall of QEMU does to a halting sampler and to the time census, the cause of the
    hla_swd PCSR residue (docs/live.md). QEMU is stopped (SIGSTOP, SIGCONT after STALL_S) in
    the middle of a `--mode pcsr` recording through hla_swd, whose every read is a halt of QEMU:
    as a host's scheduler does to its vCPU thread on a loaded machine, only longer and once.
    If the stall falls in an instruction's uniform-cost wait, the time census gives it whole to
    that instruction (truth.c, charge_time), and its stall column says so; the read waiting on
    the halt meanwhile lands once. So the function that took it is held within Z standard
    errors of its share without the stall, and is read less than its share with it (measured:
    main 0.90 % read against 25.62 % with the stall and 0.83 % without; under four busy loops
    classify 31.30 against 55.31 and 37.78); every function holds to the interval between the
    two, as every OpenOCD rig's recording is held (openocd_record_suite.windowed). A stall
    that falls between two instructions, or in a halt, is left out of the census (no gap over
    20 us counts), and the stall is made again, at most TRIES times in the recording, until one
    falls in a wait; each try is read from a census snapshot."""
    stlink_transport = "hla_swd"
    STALL_S = 3.0   # 4 s ended the recording: the link lost (docs/live.md, the hla_swd residue)
    TRIES = 8
    SAMPLES = 1000

    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
        try:
            cls._run()
        finally:
            stop_rig(cls)

    @classmethod
    def _stall_once(cls) -> int:
        """Stops QEMU for STALL_S; the stall column's growth over it, in ns."""
        before = sum(cls.qemu.snapshot_census()[2].values())
        os.kill(cls.qemu.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(cls.STALL_S)
        finally:
            os.kill(cls.qemu.proc.pid, signal.SIGCONT)
        return sum(cls.qemu.snapshot_census()[2].values()) - before

    @classmethod
    def _run(cls):
        start_rig(cls, ELF, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS)
        rec = cls.work / "stalled.rec"
        before = cls.qemu.snapshot_census()
        p = spawn(openocd_record_suite.record(cls.tcl_port, "pcsr", "--samples", str(cls.SAMPLES), "--batch",
                                              str(openocd_record_suite.PCSR_BATCH), *openocd_record_suite.PCSR_INTERVAL,
                                              rec=rec), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            openocd_record_suite.wait_for_samples(p, rec, 10 * openocd_record_suite.PCSR_BATCH)
            cls.tries = []
            while len(cls.tries) < cls.TRIES and p.poll() is None:
                cls.tries.append(cls._stall_once())
                if cls.tries[-1] >= 0.9 * cls.STALL_S * 1e9:
                    break
            out, err = p.communicate(timeout=600)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        after = cls.qemu.snapshot_census()
        cls.result = (p.returncode, out, err)
        cls.state = cls.tcl.run("[target current] curstate").strip()
        cls.census, cls.stalls = openocd_record_suite.window_census(before, after)
        print(f"\nstalls of {cls.STALL_S} s, the stall column's growth at each: "
              f"{[round(ns / 1e9, 3) for ns in cls.tries]} s; the window's stalls by function: "
              f"{ {k: round(v / 1e9, 3) for k, v in cls.stalls.items() if v} } s", file=sys.stderr)

    def test_the_stalled_function_is_held_to_its_share_without_the_stall(self):
        code, out, err = self.result
        self.assertEqual(code, 0, err)
        self.assertGreaterEqual(self.tries[-1], 0.9 * self.STALL_S * 1e9,
                                f"none of {len(self.tries)} stalls fell in an instruction's wait")
        doc = json.loads(out)
        observed = {row["name"]: row["percent"] / 100 for row in doc["functions"]}
        ratios, largest = fwtest.burst_ratios(doc)
        census = openocd_record_suite.shares(self.census)
        stall_free = openocd_record_suite.shares(fwtest.stall_free_census(self.census, self.stalls))
        stalled = max(self.stalls, key=self.stalls.get)
        print(f"{stalled}: read {100 * observed.get(stalled, 0):.2f} %, census {100 * census[stalled]:.2f} %, "
              f"without its stalls {100 * stall_free[stalled]:.2f} %", file=sys.stderr)
        check = dict(n=doc["samples"], min_share=0.01, z=openocd_record_suite.Z, ratios=ratios, default_ratio=largest)
        # Against the census without its stalls every function holds, and so against the
        # interval between the two; the stalled function is read less than the census with the
        # stall says. (Beyond Z errors of it only on a quiet host: under load the reads of a
        # batch fall together and the errors grow to 3.7 times the binomial, where a 3 s stall
        # in a 38 % function is 2.5 of them.)
        self.assertEqual(fwtest.beyond_se(observed, stall_free, **check), [])
        self.assertEqual(fwtest.beyond_se(observed, census, stall_free=stall_free, **check), [])
        self.assertLess(observed.get(stalled, 0), census[stalled])
        self.assertEqual(self.state, "running")


class ProbeLinkDropped(unittest.TestCase):
    """The link between OpenOCD and the probe breaks during a halt-mode recording."""
    stlink_transport = "hla_swd"

    @classmethod
    def setUpClass(cls):
        require((OPENOCD,), (CLI, ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-record-stlink-"))
        cls.proxy = None
        try:
            cls._run()
        finally:
            if cls.proxy is not None:
                cls.proxy.close()
            stop_rig(cls)

    @classmethod
    def probe_link(cls, probe_port: int) -> int:
        cls.proxy = FaultProxy(probe_port, Faults())
        return cls.proxy.port

    @classmethod
    def _run(cls):
        start_rig(cls, ELF)
        rec = cls.work / "dropped.rec"
        p = spawn(openocd_record_suite.record(cls.tcl_port, "halt", "--samples", "10000000", rec=rec),
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            openocd_record_suite.wait_for_samples(p, rec, 20)
            cls.proxy.close()   # both connections close: the probe is gone for OpenOCD
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        cls.dropped = (p.returncode, out, err, openocd_record_suite.report_json(rec))
        print(f"\nprobe link dropped during a recording: exit {p.returncode}\n{err}", file=sys.stderr)
        cls.vprobe_code = cls.vprobe.wait(timeout=10)
        cls.vprobe_reader.join(timeout=5)
        cls.guest_running = guest_running(cls.qemu)

    def test_the_recording_ends_with_every_sample_in_its_file(self):
        code, out, err, doc = self.dropped
        # OpenOCD stays up and answers with an error, and then cannot read DHCSR: the link is
        # lost (exit 3), the recording cut short, its samples kept.
        self.assertEqual(code, 3, err)
        last = err.strip().splitlines()[-1]
        self.assertRegex(last, r"^mcuprof record: stopped early, the link was lost: OpenOCD no longer reaches the "
                               r"target, after: .*; the \d+ samples recorded are in ")
        said = int(re.search(r"the (\d+) samples recorded", last).group(1))
        self.assertGreater(said, 0)
        self.assertEqual(doc["samples"], said)
        self.assertEqual(json.loads(out)["samples"], said)
        self.assertTrue(doc["sampler"]["link_lost"])

    def test_the_vprobe_detaches_and_the_guest_runs(self):
        self.assertEqual(self.vprobe_code, 0, "".join(self.vprobe_log))
        self.assertIn("OpenOCD disconnected", "".join(self.vprobe_log))
        self.assertTrue(self.guest_running, "the guest is not running after the probe link dropped")


class ProbeLinkDroppedDapDirect(ProbeLinkDropped):
    stlink_transport = "dapdirect_swd"


if __name__ == "__main__":
    unittest.main()
