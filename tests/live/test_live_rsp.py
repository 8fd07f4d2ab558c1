"""Live sampling over GDB RSP against the reference firmware in QEMU, checked against the
truth plugin and against the on-chip sampler of the same run (issue 4's cross-checks).

Every bound is 4 standard errors of the share, sqrt(p(1-p)/N), with p the true share:
a correct sampler fails one such check about once in 16 000."""
from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from live_runs import (Z, counts_of, mcuprof, replayed_recording, report_json, still_running,
                       three_loops_within_4_se, time_census_of, truth_by_function, within)
from spawn import spawn


class ExactPacing(unittest.TestCase):
    """(a) Record the run, replay it and stop it at random instruction counts (QMP replay
    plus replay_break): samples uniform over instructions, compared with the plugin's census
    of the same run."""

    def exact_profile(self, name: str, samples_wanted: int):
        doc, counts = replayed_recording(self, name, samples_wanted, "75")
        return doc, truth_by_function(name, counts), sum(counts.values())

    def test_loops_every_function_within_4_se(self):
        doc, truth, total = self.exact_profile("loops_jit_m4", 1500)
        n = doc["samples"]
        self.assertGreaterEqual(n, 1000)
        names = [k for k, v in truth.items() if v / total >= 0.005]
        self.assertIn("hot_a", names)
        self.assertEqual(within(counts_of(doc), truth, names, n), [])
        self.assertEqual(doc["sampler"]["end"], "the target exited with code 0")

    def test_onchip_dump_agrees_with_host_profile(self):
        # (d) The replay prints the on-chip sampler's dump of the recorded run: the host's
        # samples and the chip's are of the same run, and agree within their combined error.
        uart = fwtest.work_dir("mcuprof-live-") / "uart.txt"
        doc, _ = replayed_recording(self, "loops_jit_m4", 3000, "76", uart=uart)
        host = counts_of(doc)
        chip = counts_of(report_json(uart, fwtest.elf_path("loops_jit_m4")))
        loops = ["hot_a", "hot_b", "hot_c"]
        nh = sum(host.get(k, 0) for k in loops)
        nc = sum(chip.get(k, 0) for k in loops)
        self.assertGreater(nh, 2000)
        self.assertGreater(nc, 2000)
        for k in loops:
            ph, pc = host.get(k, 0) / nh, chip.get(k, 0) / nc
            p = (host.get(k, 0) + chip.get(k, 0)) / (nh + nc)
            se = math.sqrt(p * (1 - p) * (1 / nh + 1 / nc))
            self.assertLessEqual(abs(ph - pc), Z * se, (k, ph, pc, se))

    def test_mixed_workload_every_function_within_4_se(self):
        # Loads/stores, divisions, branches and calls cost QEMU different host time per
        # instruction; pacing by instruction count must not care.
        doc, truth, total = self.exact_profile("mixed_m4", 2000)
        n = doc["samples"]
        self.assertGreaterEqual(n, 1000)
        names = [k for k, v in truth.items() if v / total >= 0.005]
        for expected in ("copy_scale", "divide_all", "classify", "recurse", "leaf"):
            self.assertIn(expected, names)
        self.assertEqual(within(counts_of(doc), truth, names, n), [])


class WallClockPacing(unittest.TestCase):
    """(b) Wall-clock halting, one instruction per translation block (stops land on
    instructions): the three loops against the time census of the recording's own window
    (live_runs.time_census_of). The image never ends, so the recording ends by its sample count
    however fast QEMU runs."""

    def test_three_loops_against_truth(self):
        name = "loops_forever_m4"
        elf = fwtest.elf_path(name)
        work = fwtest.work_dir("mcuprof-live-")
        rec = work / "rec.bin"
        result, times, stalls = time_census_of(elf, work, name, lambda q: mcuprof(
            "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--interval", "200us", "--samples", "5000",
            "--elf", str(elf), "-o", str(rec), "--format", "json"))
        three_loops_within_4_se(self, result, name, times, rec, stalls)


class DisabledInterrupts(unittest.TestCase):
    """(c) A debug halt enters a PRIMASK region: the halting sampler gives the locked loop to
    `locked`, where the on-chip sampler of the same firmware gives it to irq_on."""

    def test_halting_sees_inside_cpsid(self):
        doc, truth, total = ExactPacing.exact_profile(self, "irqoff_m4", 1500)
        observed = counts_of(doc)
        n = doc["samples"]
        p = truth["locked"] / total
        self.assertGreater(p, 0.2)
        self.assertLessEqual(abs(observed.get("locked", 0) / n - p), Z * math.sqrt(p * (1 - p) / n))
        self.assertLess(observed.get("irq_on", 0) / n, 0.01)
        chip = counts_of(report_json(fwtest.run("irqoff_m4").dump_path, fwtest.elf_path("irqoff_m4")))
        self.assertGreater(chip.get("irq_on", 0) / sum(chip.values()), 0.2)
        self.assertLess(chip.get("locked", 0) / sum(chip.values()), 0.01)


class ReadOnchip(unittest.TestCase):
    """--read-onchip reads the reference sampler's memory over GDB at prof_dump: the same
    dump, line for line, as the firmware then prints over its UART."""

    def check(self, name: str):
        elf = fwtest.elf_path(name)
        work = fwtest.work_dir("mcuprof-live-")
        uart, dump = work / "uart.txt", work / "onchip.txt"
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, uart=uart, timeout=300) as q:
            r = mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--read-onchip", "--at", "prof_dump",
                        "--elf", str(elf), "-o", str(dump), "--format", "json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(q.wait(timeout=120), 0)   # detached: the firmware ran on to its exit
        keep = ("prof ", "p ", "g ", "h ", "end")
        printed = [l for l in uart.read_text().splitlines() if l.startswith(keep)]
        read = [l for l in dump.read_text().splitlines() if l.startswith(keep)]
        self.assertGreater(len(printed), 10)
        self.assertEqual(read, printed)
        self.assertEqual(json.loads(r.stdout)["samples"], fwtest.parse_dump(uart.read_text()).n)

    def test_ring(self):
        self.check("loops_jit_m4")

    def test_histogram(self):
        self.check("loops_hist4_m4")

    def test_tagged_ring(self):
        self.check("rtos_m4")


class EndsCleanly(unittest.TestCase):
    """SIGINT ends a recording with the target running; a dropped link keeps the samples.
    Both on never-ending images: how far the firmware gets meanwhile does not matter."""

    def start_recording(self, q, rec: Path) -> subprocess.Popen:
        return spawn([str(fwtest.CLI), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--interval", "1ms",
                      "--samples", "10000000", "--elf", str(q.elf), "-o", str(rec)],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_for_samples(self, p: subprocess.Popen, rec: Path, elf: Path, count: int, limit: float = 120.0):
        """Until the recording (flushed every 100 ms) holds at least `count` samples, as `mcuprof
        report` reads them (its size is no count: a sample's bytes vary with what it carries).
        `limit` seconds is far above the time a few hundred halts take even on a slow, loaded
        machine."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if rec.exists():
                r = subprocess.run([str(fwtest.CLI), "report", str(rec), "--elf", str(elf), "--format", "json"],
                                   capture_output=True, text=True, timeout=60)
                if r.returncode == 0 and json.loads(r.stdout)["samples"] >= count:
                    return
            if p.poll() is not None:
                self.fail(f"record ended before {count} samples: {p.stderr.read()}")
            time.sleep(0.1)
        self.fail(f"no {count} samples in {rec} within {limit:.0f} s")

    def test_sigint_resumes_the_target_and_reports(self):
        rec = fwtest.work_dir("mcuprof-live-") / "rec.bin"
        with qemu_runner.QemuRun(fwtest.elf_path("loops_forever_m4"), gdb=True, halted=True, qmp=True,
                                 singlestep=True, uart=None, timeout=300) as q:
            p = self.start_recording(q, rec)
            self.wait_for_samples(p, rec, q.elf, 100)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("interrupted by a signal", err)
            self.assertIn("hot_a", out)
            self.assertTrue(still_running(q), "record left the target halted")
        doc = report_json(rec, fwtest.elf_path("loops_forever_m4"))
        self.assertGreaterEqual(doc["samples"], 100)
        self.assertEqual(doc["sampler"]["end"], "interrupted by a signal")

    def test_link_lost_keeps_the_samples(self):
        rec = fwtest.work_dir("mcuprof-live-") / "rec.bin"
        with qemu_runner.QemuRun(fwtest.elf_path("mixed_forever_m4"), gdb=True, halted=True, uart=None,
                                 timeout=300) as q:
            p = self.start_recording(q, rec)
            self.wait_for_samples(p, rec, q.elf, 100)
            q.kill()
            out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, err)   # cut short by a lost link (docs/usage.md)
        last = err.strip().splitlines()[-1]
        self.assertIn("the link was lost", last)
        # Every sample mcuprof says it recorded is in the file (the file's size above only
        # says that samples were coming; it is no count).
        announced = int(re.search(r"the (\d+) samples recorded", last).group(1))
        doc = report_json(rec, fwtest.elf_path("mixed_forever_m4"))
        self.assertGreater(announced, 0)
        self.assertEqual(doc["samples"], announced)
        self.assertTrue(doc["sampler"]["link_lost"])
        self.assertTrue(any("link was lost" in w["message"] for w in doc["warnings"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
