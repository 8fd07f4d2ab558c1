"""One command for an exact profile in QEMU: `record --qemu`, `top --qemu` and `truth --qemu`
start QEMU themselves (record, then replay at exact instruction counts), and leave nothing
running; and a wall-clock recording of QEMU's gdbstub carries the bias warning in every report.

Shares are checked within 4 standard errors, sqrt(p(1-p)/N), of the truth plugin's census of
the same run. A finite image runs to its exit (its length is counted in instructions); a
never-ending one ends at an instruction budget (--instructions), so nothing depends on how
fast QEMU runs."""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from process_table import alive, children_of
from spawn import spawn

Z = 4.0
MACHINE = "netduinoplus2"


class Watched:
    """mcuprof run with its children watched in the process table while it runs. Its output
    goes to files: a pipe nobody reads while it runs would fill and stop it."""

    def __init__(self, *args: str):
        self.out = tempfile.TemporaryFile(mode="w+")
        self.err = tempfile.TemporaryFile(mode="w+")
        self.proc = spawn([str(fwtest.CLI), *args], stdout=self.out, stderr=self.err, text=True)
        self.children: set[int] = set()

    def watch_until(self, done, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and not done():
            self.children |= children_of(self.proc.pid)
            if time.monotonic() > deadline:
                self.proc.kill()
                raise AssertionError("mcuprof did not finish in time")
            time.sleep(0.05)

    def finish(self, timeout: float = 600) -> tuple[int, str, str]:
        self.watch_until(lambda: False, timeout)
        self.proc.wait(timeout=60)
        with self.out, self.err:
            self.out.seek(0)
            self.err.seek(0)
            return self.proc.returncode, self.out.read(), self.err.read()

    def left_running(self) -> list[int]:
        return [pid for pid in self.children if alive(pid)]


def by_function(counts: dict[int, int], elf_name: str) -> dict[str, float]:
    return dict(fwtest.by_function(counts, fwtest.symbols(elf_name)))


def samples_by_function(doc: dict) -> dict[str, float]:
    return {row["name"]: row["samples"] for row in doc["functions"]}


class RecordInQemu(unittest.TestCase):
    def setUp(self):
        self.work = fwtest.work_dir("mcuprof-qemu-test-")

    def record(self, elf: str, *extra: str) -> tuple[dict, dict[int, int], str]:
        rec, census = self.work / f"{elf}.bin", self.work / f"{elf}.census"
        run = Watched("record", "--qemu", MACHINE, "--elf", str(fwtest.elf_path(elf)), "-o", str(rec),
                      "--census", str(census), "--format", "json", *extra)
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertTrue(run.children, "mcuprof started no QEMU")
        self.assertEqual(run.left_running(), [], "QEMU left running")
        return json.loads(out), fwtest.read_counts(census), err

    def test_finite_image_within_4_se_of_truth_qemu(self):
        doc, census, err = self.record("mixed_m4", "--samples", "3000", "--seed", "1")
        # truth --qemu runs the same firmware to its exit: the same run, instruction for instruction.
        truth = Watched("truth", "--qemu", MACHINE, "--elf", str(fwtest.elf_path("mixed_m4")),
                        "--census", str(self.work / "truth.census"), "--format", "json")
        rc, out, terr = truth.finish()
        self.assertEqual(rc, 0, terr)
        self.assertEqual(truth.left_running(), [])
        truth_counts = fwtest.read_counts(self.work / "truth.census")
        self.assertEqual(truth_counts, census)
        self.assertEqual(json.loads(out)["samples"], sum(census.values()))
        self.assertTrue(json.loads(out)["origin"].endswith(str(self.work / "truth.census")), json.loads(out)["origin"])

        n = doc["samples"]
        self.assertGreater(n, 3000 - 5 * math.sqrt(3000))   # about --samples, over the whole run
        self.assertLess(n, 3000 + 5 * math.sqrt(3000))
        self.assertIn("end of the recorded run", doc["sampler"]["end"])
        self.assertTrue(doc["origin"].startswith("recording (qemu): "), doc["origin"])   # not "(gdb)"
        self.assertEqual(fwtest.beyond_se(fwtest.fractions(samples_by_function(doc), n),
                                          fwtest.fractions(by_function(census, "mixed_m4")), n, min_share=0.005,
                                          z=Z), [])
        self.assertNotIn("wall clock", err)
        self.assertNotIn("emulator-bias", fwtest.warning_kinds(doc))

        # The same run by hand (docs/live.md's command lines, as scripts/demo.py runs them): the
        # same seed and mean interval give the same samples.
        elf = fwtest.elf_path("mixed_m4")
        rr, rec = self.work / "run.rr", self.work / "by-hand.bin"
        with qemu_runner.QemuRun(elf, record=rr, uart=None, timeout=300) as q:
            self.assertEqual(q.wait(), 0)
        with qemu_runner.QemuRun(elf, replay=rr, gdb=True, halted=True, uart=None, timeout=600) as q:
            r = subprocess.run([str(fwtest.CLI), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--pace", "icount",
                                "--interval", str(round(sum(census.values()) / 3000)), "--samples", "30000",
                                "--seed", "1", "--elf", str(elf), "-o", str(rec), "--format", "json"],
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            q.wait()
        by_hand = samples_by_function(json.loads(r.stdout))
        self.assertEqual(samples_by_function(doc), by_hand)

    def test_never_ending_image_ends_at_the_budget_with_stacks(self):
        budget = 20_000_000
        doc, census, _ = self.record("calltree_forever_m4", "--instructions", "20M", "--samples", "1200",
                                     "--seed", "7", "--stacks")
        total = sum(census.values())
        self.assertGreaterEqual(total, budget)
        # The census says it is of a run cut at its budget, and reports of it warn so.
        census_path = self.work / "calltree_forever_m4.census"
        self.assertIn(f"# mcuprof: run cut at the instruction budget: {budget} instructions asked, {total} executed",
                      census_path.read_text())
        truth = fwtest.cli_json("truth", str(census_path), "--elf", str(fwtest.elf_path("calltree_forever_m4")))
        self.assertTrue(any("run cut at the instruction budget" in w["message"] for w in truth["warnings"]),
                        truth["warnings"])
        n = doc["samples"]
        self.assertGreater(n, 1000)
        self.assertEqual(fwtest.beyond_se(fwtest.fractions(samples_by_function(doc), n),
                                          fwtest.fractions(by_function(census, "calltree_forever_m4")), n, min_share=0.005,
                                          z=Z), [])
        stacks = fwtest.cli_json("report", str(self.work / "calltree_forever_m4.bin"), "--elf",
                                 str(fwtest.elf_path("calltree_forever_m4")), "--by", "stack")
        self.assertTrue(any(";" in name for name in fwtest.rows(stacks)), "no unwound stacks")

    def test_truth_qemu_without_census_names_the_run_not_a_deleted_file(self):
        # The session's own counts file is temporary: the report's origin names the run instead.
        elf = str(fwtest.elf_path("calltree_o2_m4"))
        truth = Watched("truth", "--qemu", MACHINE, "--elf", elf, "--format", "json")
        rc, out, err = truth.finish()
        self.assertEqual(rc, 0, err)
        self.assertEqual(truth.left_running(), [])
        origin = json.loads(out)["origin"]
        self.assertEqual(origin, f"exact instruction counts (QEMU truth plugin): truth --qemu {MACHINE} --elf {elf}")

    def test_installed_tool_finds_its_plugin(self):
        # cmake --install puts the plugin in lib/mcuprof; the installed tool finds it from its own path.
        prefix = self.work / "prefix"
        subprocess.run(["cmake", "--install", str(fwtest.CLI.parent), "--prefix", str(prefix)], check=True,
                       capture_output=True, timeout=300)
        census = self.work / "installed.census"
        r = subprocess.run([str(prefix / "bin" / "mcuprof"), "truth", "--qemu", MACHINE, "--elf",
                            str(fwtest.elf_path("mixed_m4")), "--census", str(census)],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("classify", r.stdout)
        self.assertGreater(sum(fwtest.read_counts(census).values()), 0)

    def test_top_qemu(self):
        run = Watched("top", "--qemu", MACHINE, "--elf", str(fwtest.elf_path("loops_jit_m4")),
                      "--samples", "300", "--interval", "20000", "--rows", "3")
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertIn("hot_a", out)
        self.assertIn("300 samples", out.strip().split("\n\n")[-1])
        self.assertEqual(run.left_running(), [])

    def test_top_stacks_shows_the_inclusive_shares_report_gives_the_same_samples(self):
        # The last table covers every sample of the run; report computes the same inclusive
        # shares from the samples file through the attribution core, not top's tally.
        rec = self.work / "top-stacks.bin"
        elf = fwtest.elf_path("calltree_o0_m4")
        run = Watched("top", "--qemu", MACHINE, "--elf", str(elf), "--stacks", "--samples", "400", "--rows", "0",
                      "-o", str(rec))
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertEqual(run.left_running(), [])
        last = out.strip().split("\n\n")[-1].splitlines()
        self.assertEqual(last[1].split(), ["%", "+-se", "incl", "%", "+-se", "weight", "function"])
        shown = {}
        for line in last[2:]:
            self_pct, _, incl, _, _, name = line.split(None, 5)
            shown[name] = (float(self_pct), float(incl))
        doc = fwtest.cli_json("report", str(rec), "--elf", str(elf))
        report = {row["name"]: row for row in doc["functions"]}
        self.assertIn("main", shown)
        self.assertGreater(shown["main"][1], shown["main"][0])   # main's callees count in its inclusive share
        for name, row in report.items():
            self.assertAlmostEqual(shown[name][0], row["percent"], delta=0.006, msg=name)
            self.assertAlmostEqual(shown[name][1], row["inclusive_percent"], delta=0.006, msg=name)

    def test_sigint_while_sampling_keeps_the_samples_and_stops_qemu(self):
        rec = self.work / "int.bin"
        run = Watched("record", "--qemu", MACHINE, "--elf", str(fwtest.elf_path("calltree_forever_m4")),
                      "--instructions", "400M", "--interval", "2000", "--samples", "1000000", "-o", str(rec))
        # The samples file appears once the replay is sampled: interrupt then.
        run.watch_until(lambda: rec.exists() and rec.stat().st_size > 4096, 600)
        run.proc.send_signal(signal.SIGINT)
        rc, out, err = run.finish()
        self.assertEqual(rc, 0, err)
        self.assertIn("interrupted by a signal", err)
        self.assertEqual(run.left_running(), [])

    def test_qemu_failure_is_one_line_with_qemu_words(self):
        run = Watched("record", "--qemu", "no-such-board", "--elf", str(fwtest.elf_path("loops_jit_m4")),
                      "-o", str(self.work / "x.bin"))
        rc, out, err = run.finish()
        self.assertEqual(rc, 2, err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertIn("unsupported machine type", lines[0])   # QEMU's own words
        self.assertEqual(run.left_running(), [])

    def test_image_for_another_board_names_the_lockup_not_the_register_dump(self):
        # mixed_m4 is linked for the STM32's flash at 0x08000000; the MPS2 board has none there,
        # so the first vector fetch faults and QEMU aborts with "Lockup" and a register dump.
        run = Watched("record", "--qemu", "mps2-an386", "--elf", str(fwtest.elf_path("mixed_m4")),
                      "-o", str(self.work / "x.bin"))
        rc, out, err = run.finish()
        self.assertEqual(rc, 2, err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertIn("Lockup", lines[0])                  # QEMU's own words
        self.assertIn("is -M/--qemu the board", lines[0])  # the likely cause
        self.assertNotIn("R00=", lines[0])                 # not the register dump
        self.assertEqual(run.left_running(), [])

    def test_image_without_interrupts_is_refused_before_the_replay(self):
        # loops_forever_m4 takes no interrupt: QEMU's record mode runs it 2^31 instructions
        # without a stop, a stretch its replay cannot sample past instruction 65535 (every
        # sample was lost, "QEMU replayed its shutdown"); the run is refused, in one line.
        run = Watched("record", "--qemu", MACHINE, "--elf", str(fwtest.elf_path("loops_forever_m4")),
                      "--samples", "50", "-o", str(self.work / "x.bin"))
        rc, out, err = run.finish()
        self.assertEqual(rc, 2, err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        self.assertRegex(lines[0], r"QEMU recorded \d+ instructions without a stop")
        self.assertIn("timer interrupt", lines[0])
        self.assertEqual(run.left_running(), [])


def docs_script(doc: str, heading: str) -> str:
    """The first ```sh block under `heading` in docs/DOC, as the reader copies it."""
    section = (fwtest.REPO / "docs" / doc).read_text().split(heading, 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


class CensusGateAsDocumented(unittest.TestCase):
    """docs/ci.md's census gate, run as written on the call tree at -O2 (base) and -O0
    (change): the rows it names and the totals it gates on follow from the two counts files,
    read here with the ELF's own symbols (nm), not by mcuprof."""

    FAIL_ABOVE_PP, FAIL_TOTAL_ABOVE = 1.0, 5.0   # the script's bounds

    def run_script(self, base: str, change: str) -> tuple[subprocess.CompletedProcess, Path]:
        work = fwtest.work_dir("mcuprof-ci-doc-")
        script = work / "census-gate.sh"
        script.write_text(docs_script("ci.md", "## The exact gate"))
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
        env["PATH"] = f"{fwtest.CLI.parent}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run(["bash", str(script), str(fwtest.elf_path(base)), str(fwtest.elf_path(change))],
                              cwd=work, env=env, capture_output=True, text=True, timeout=1200,
                              start_new_session=True)
        return proc, work

    def test_o2_to_o0_fails_on_the_rows_and_the_total(self):
        proc, work = self.run_script("calltree_o2_m4", "calltree_o0_m4")
        base, change = fwtest.read_counts(work / "base.truth"), fwtest.read_counts(work / "change.truth")
        a, b = by_function(base, "calltree_o2_m4"), by_function(change, "calltree_o0_m4")
        ta, tb = sum(base.values()), sum(change.values())
        grown = {name for name in set(a) | set(b) if name != "?" and
                 100 * (b.get(name, 0) / tb - a.get(name, 0) / ta) > self.FAIL_ABOVE_PP}
        self.assertTrue(grown, "-O0 must move time into some function")
        self.assertGreater(100 * (tb / ta - 1), self.FAIL_TOTAL_ABOVE, "-O0 must take more instructions")

        self.assertEqual(proc.returncode, 4, proc.stderr)
        named = set(re.findall(r"^mcuprof diff: (\S+) grew", proc.stderr, re.M))
        self.assertEqual(named, grown)
        verdict = proc.stdout.splitlines()[0]
        self.assertTrue(verdict.startswith("### mcuprof: failed, "), verdict)
        self.assertIn(f"the run's instructions changed by {100 * (tb / ta - 1):+.2f} %, more than 5 %", verdict)
        self.assertIn(f"instructions of the whole run: A {ta}, B {tb}, B/A {tb / ta:.3f}", proc.stdout)
        for name in grown:
            self.assertIn(f"`{name}`", verdict)

    def test_a_build_against_itself_passes_and_nothing_moved(self):
        proc, work = self.run_script("calltree_o2_m4", "calltree_o2_m4")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(fwtest.read_counts(work / "base.truth"), fwtest.read_counts(work / "change.truth"))
        self.assertTrue(proc.stdout.startswith("### mcuprof: passed, no function grew"), proc.stdout)
        self.assertIn("the run's instructions changed by +0.00 %, not more than 5 %", proc.stdout)
        self.assertIn("No row moved (both sides are exact counts)", proc.stdout)


class WallClockBiasWarning(unittest.TestCase):
    """QEMU's gdbstub is recognised; wall-clock halting of it is flagged in every report."""

    def test_wall_clock_recording_of_qemu_warns_everywhere(self):
        work = fwtest.work_dir("mcuprof-qemu-test-")
        elf = fwtest.elf_path("loops_forever_m4")
        rec = work / "wall.bin"
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, uart=None, timeout=300) as q:
            r = subprocess.run([str(fwtest.CLI), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", str(elf),
                                "--samples", "200", "--interval", "200us", "-o", str(rec)],
                               capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Once, in the profile's warnings (the text report on standard output), not twice.
        self.assertEqual((r.stdout + r.stderr).count("QEMU halted by wall clock"), 1, r.stdout + r.stderr)
        self.assertIn("warning: QEMU halted by wall clock", r.stdout)
        self.assertIn("--qemu MACHINE", r.stdout)

        def report(*args: str) -> str:
            out = subprocess.run([str(fwtest.CLI), "report", str(rec), "--elf", str(elf), *args],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout

        self.assertIn("QEMU halted by wall clock", report())
        self.assertIn("emulator-bias", fwtest.warning_kinds(json.loads(report("--format", "json"))))
        self.assertIn("QEMU halted by wall clock", report("--format", "html"))

        census = work / "census.txt"
        with qemu_runner.QemuRun(elf, truth=census, uart=None, timeout=300) as q:
            time.sleep(0.5)
            q.stop(grace=60)
        diff = subprocess.run([str(fwtest.CLI), "diff", str(rec), str(census), "--elf", str(elf)],
                              capture_output=True, text=True, timeout=120)
        self.assertIn("QEMU halted by wall clock", diff.stdout + diff.stderr)


if __name__ == "__main__":
    unittest.main()
