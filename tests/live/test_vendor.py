"""The vendor-shaped reference firmware (firmware-ref/src/vendor, issue 41): an assembly start-up
without call-frame information, code run from RAM (.RamFunc inside .data, and .ramfunc of its
own), assembly helpers with and without a frame; built by GCC, by clang-19 for thumbv7em,
thumbv6m (microbit) and thumbv8m.main (mps2-an505), and stripped of its DWARF. Against oracles
that are not mcuprof:

- shares: every function row within 4 standard errors, sqrt(p(1-p)/N), of the truth plugin's
  census of the same `record --qemu` run, grouped by arm-none-eabi-nm's symbols (start, size),
  RAM functions included;
- stacks: at most 1 % of the chains truncated, and every chain (`report --format collapsed`) a
  path of the call tree main.c and helpers.s spell out, rooted at Reset_Handler, the reset
  vector's target, which has no call-frame information;
- the firmware check over QEMU's gdbstub, the target halted at reset (the RAM code not copied
  yet) and running: the right ELF is taken, a wrong one (another image, and the clang build of
  the same sources) refused with exit 2 and the target left running.
Every image runs to its own semihosting exit or is stopped by sample count; nothing depends on
the machine's speed."""
from __future__ import annotations

import collections
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from elf_symbols import nm_symbols, symbolizer_chain

Z = 4.0
SAMPLES = 2000
IMAGES = (("vendor_m4", "netduinoplus2"), ("vendor_clang_m4", "netduinoplus2"), ("vendor_clang_m0", "microbit"),
          ("vendor_clang_m33", "mps2-an505"), ("vendor_nodebug_m4", "netduinoplus2"))
LEAVES = {"filter_block", "ram_checksum", "ram_scale", "asm_mix", "asm_copy"}
HANDLER_FRAMES = {"SysTick_Handler", "tick_work"}


def run_mcuprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(fwtest.CLI), *args], capture_output=True, text=True, timeout=600)


def mcuprof(*args: str) -> str:
    proc = run_mcuprof(*args)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def chain_fits_the_tree(frames: list[str]) -> bool:
    """Whether a chain, root first, is a path of the image's call tree: handler frames at its end
    (SysTick over anything), one_round inlined or not, the linker's veneer to the RAM code."""
    while frames and frames[-1] in HANDLER_FRAMES:
        frames = frames[:-1]
    frames = [f for f in frames if f != "one_round" and not (f.startswith("__") and f.endswith("_veneer"))]
    if frames[:1] != ["Reset_Handler"]:
        return False
    rest = frames[1:]
    return (rest in ([], ["copy_region"], ["SystemInit"], ["main"], ["main", "asm_mix", "mix_step"])
            or (len(rest) == 2 and rest[0] == "main" and rest[1] in LEAVES))


def collapsed_chains(collapsed: str) -> tuple[list[list[str]], int]:
    """The complete chains of `report --format collapsed` (root first), and every chain's count."""
    chains, counted = [], 0
    for line in collapsed.splitlines():
        chain, count = line.rsplit(" ", 1)
        counted += int(count)
        if not chain.startswith("[truncated]"):
            chains.append(chain.split(";"))
    return chains, counted


def census_by_function(census: dict[int, int], elves: list[Path]) -> collections.Counter:
    """The census's counts by the function (start address, by arm-none-eabi-nm's symbols of
    every image) that holds each address; None for an address in no function."""
    functions = sorted({(s.start, s.size) for elf in elves for s in nm_symbols(elf, "TtWw") if s.size > 0},
                       reverse=True)
    truth = collections.Counter()
    for address, count in census.items():
        owner = next((start for start, size in functions if start <= address < start + size), None)
        truth[owner] += count
    return truth


def rows_off_the_census(doc: dict, truth: collections.Counter) -> list[str]:
    """The function rows of a JSON report more than Z standard errors from the census."""
    total, n = sum(truth.values()), doc["samples"]
    off = []
    for row in doc["functions"]:
        if "address" not in row:
            continue
        p = truth.get(row["address"], 0) / total
        se = math.sqrt(max(p * (1 - p), 1.0 / n) / n)
        z = (row["samples"] / n - p) / se
        if abs(z) > Z:
            off.append(f"{row['name']}: {100 * row['samples'] / n:.2f} % against {100 * p:.2f} %, z {z:.2f}")
    return off


def code_ranges(elf: Path) -> list[tuple[int, int]]:
    """[start, end) of every executable section where it runs, as arm-none-eabi-readelf lists them."""
    out = subprocess.run(["arm-none-eabi-readelf", "-SW", str(elf)], capture_output=True, text=True, check=True).stdout
    ranges = []
    for line in out.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) >= 8 and fields[0].startswith("[") and "X" in fields[7]:
            start, size = int(fields[3], 16), int(fields[5], 16)
            if size:
                ranges.append((start, start + size))
    return ranges


class VendorFirmware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-vendor-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_shares_and_stacks_against_the_truth(self):
        for image, machine in IMAGES:
            with self.subTest(image=image):
                elf = fwtest.elf_path(image)
                rec, census_file = self.work / f"{image}.bin", self.work / f"{image}.census"
                doc = json.loads(mcuprof("record", "--qemu", machine, "--elf", str(elf), "--samples", str(SAMPLES),
                                         "--seed", "7", "--stacks", "-o", str(rec), "--census", str(census_file),
                                         "--format", "json"))
                truth = census_by_function(fwtest.read_counts(census_file), [elf])
                n = doc["samples"]
                self.assertGreater(n, SAMPLES * 0.8)
                self.assertEqual(rows_off_the_census(doc, truth), [], f"{image}: rows off the census ({n} samples)")
                ram = [row for row in doc["functions"] if row.get("name") in ("ram_checksum", "ram_scale")]
                self.assertEqual(len(ram), 2, f"{image}: the RAM functions have rows of their own")

                truncation = doc["truncation"]
                self.assertEqual(truncation["unwound_samples"], n)
                self.assertLessEqual(truncation["samples"], 0.01 * n, f"{image}: {truncation}")
                self.assertFalse(truncation["inclusive_lower_bounds"])
                chains, counted = collapsed_chains(mcuprof("report", str(rec), "--elf", str(elf), "--format",
                                                           "collapsed"))
                for frames in chains:
                    self.assertTrue(chain_fits_the_tree(frames), f"{image}: {frames}")
                self.assertEqual(counted, n)
                if image == "vendor_nodebug_m4":
                    self.assertTrue(any(w.get("kind") == "no-debug-info" for w in doc.get("warnings", [])), doc.get("warnings"))

    def test_lines_and_inline_chains_are_llvm_symbolizers(self):
        # Every sampled address of each build (report --by address): its line is llvm-symbolizer-19's
        # innermost, the functions it is inlined into the symbolizer's outer frames, innermost
        # first, and its function the symbolizer's outermost.
        for image, machine in IMAGES:
            if image == "vendor_nodebug_m4":
                continue   # no DWARF: no lines to hold
            with self.subTest(image=image):
                elf, rec = fwtest.elf_path(image), self.work / f"{image}-lines.bin"
                mcuprof("record", "--qemu", machine, "--elf", str(elf), "--samples", str(SAMPLES), "--seed", "5",
                        "-o", str(rec))
                rows = [r for r in json.loads(mcuprof("report", str(rec), "--by", "address", "--format", "json"))
                        ["functions"] if "address" in r]
                inlined = 0
                for row in rows:
                    theirs = symbolizer_chain(elf, row["address"])
                    what = (image, hex(row["address"]), row, theirs)
                    place = theirs[0][1]
                    self.assertEqual(os.path.normpath(row["location"]) if "location" in row else "",
                                     os.path.normpath(place) if place else "", what)
                    outer = row.get("inlined_into", [])
                    self.assertEqual(outer, [name for name, _ in theirs[1:]], what)
                    if theirs[-1][0] != "??":
                        self.assertTrue(row["function"].startswith(theirs[-1][0]), what)
                    inlined += len(outer) > 0
                print(f"\n{image}: {len(rows)} sampled addresses checked, {inlined} inside inlined code",
                      file=sys.stderr)
                self.assertGreater(len(rows), 30)

    def test_firmware_check_at_reset_and_running(self):
        right = fwtest.elf_path("vendor_forever_m4")
        wrong = (fwtest.elf_path("loops_forever_m4"), fwtest.elf_path("vendor_clang_forever_m4"))
        for halted in (True, False):
            with self.subTest(halted_at_reset=halted), \
                    qemu_runner.QemuRun(right, gdb=True, halted=halted, qmp=True, uart=None, timeout=600) as q:
                def record(elf: Path, name: str) -> subprocess.CompletedProcess:
                    return run_mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "200", "--interval",
                                       "200us", "--stacks", "--elf", str(elf), "-o", str(self.work / name))
                r = record(right, "right.bin")
                self.assertEqual(r.returncode, 0, r.stderr)
                for elf in wrong:
                    r = record(elf, "wrong.bin")
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn("does not run", r.stderr)
                    self.assertEqual(len([l for l in r.stderr.splitlines() if l.strip()]), 1, r.stderr)
                    self.assertEqual(q.qmp("query-status")["status"], "running")


class BootloaderAndApplication(unittest.TestCase):
    """vendor_boot_m4 at 0x08000000 (CRCs the application, moves VTOR, jumps) and vendor_app_m4
    linked at 0x08004000, both loaded into one netduinoplus2 (-kernel the first --elf, QEMU's
    generic loader the other)."""

    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-boot-"))
        cls.app, cls.boot = fwtest.elf_path("vendor_app_m4"), fwtest.elf_path("vendor_boot_m4")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def record(self, name: str, *args: str) -> tuple[dict, dict[int, int]]:
        rec, census = self.work / f"{name}.bin", self.work / f"{name}.census"
        doc = json.loads(mcuprof("record", "--qemu", "netduinoplus2", *args, "--samples", str(SAMPLES), "--seed", "7",
                                 "-o", str(rec), "--census", str(census), "--format", "json"))
        self.assertGreater(doc["samples"], SAMPLES * 0.8)
        return doc, fwtest.read_counts(census)

    def test_given_one_elf_the_others_samples_are_outside_it_in_one_note(self):
        for elf, other in ((self.app, self.boot), (self.boot, self.app)):
            with self.subTest(elf=elf.name):
                doc, census = self.record(elf.stem, "--elf", str(elf), "--qemu-arg=-device",
                                          f"--qemu-arg=loader,file={other}")
                self.assertEqual(rows_off_the_census(doc, census_by_function(census, [elf])), [])
                # The census's count outside this image's code, against the note's.
                mine, theirs = code_ranges(elf), code_ranges(other)
                inside = lambda a, ranges: any(lo <= a < hi for lo, hi in ranges)
                total = sum(census.values())
                p = sum(c for a, c in census.items() if not inside(a, mine)) / total
                self.assertGreater(p, 0.05)
                notes = [w["message"] for w in doc.get("warnings", []) if w["kind"] == "outside-image"]
                self.assertEqual(len(notes), 1, doc.get("warnings"))
                count = int(notes[0].split(" of ", 1)[0])
                n = doc["samples"]
                self.assertLess(abs(count / n - p), Z * math.sqrt(p * (1 - p) / n), notes[0])
                # The ranges it names are the other image's code.
                named = re.findall(r"(0x[0-9a-f]{8})(?:-(0x[0-9a-f]{8}))? \((\d+)\)", notes[0])
                self.assertTrue(named, notes[0])
                for low, high, _ in named:
                    for address in (low, high or low):
                        self.assertTrue(inside(int(address, 16), theirs), f"{address} in {other.name}: {notes[0]}")
                self.assertEqual(sum(int(c) for _, _, c in named), count)
                self.assertNotIn("unattributed", [w["kind"] for w in doc.get("warnings", [])])

    def test_given_both_every_sample_is_named_and_every_chain_complete(self):
        doc, census = self.record("both", "--elf", str(self.app), "--elf", str(self.boot), "--stacks")
        n = doc["samples"]
        self.assertEqual(rows_off_the_census(doc, census_by_function(census, [self.app, self.boot])), [])
        self.assertFalse([w for w in doc.get("warnings", []) if w["kind"] in ("outside-image", "unattributed")])
        names = {row["name"] for row in doc["functions"]}
        self.assertIn("boot_crc32", names)
        self.assertIn("mix_step", names)
        self.assertLessEqual(doc["truncation"]["samples"], 0.01 * n, doc["truncation"])
        # From the recording alone: it names both images, and the report reopens them.
        rec = self.work / "both.bin"
        again = json.loads(mcuprof("report", str(rec), "--format", "json"))
        self.assertEqual(again["functions"], doc["functions"])
        app_suffix, boot_suffix = f" ({self.app.name})", f" ({self.boot.name})"
        chains, counted = collapsed_chains(mcuprof("report", str(rec), "--format", "collapsed"))
        for frames in chains:
            if frames[0] == "Reset_Handler" + boot_suffix:
                rest = [f.removesuffix(boot_suffix) for f in frames[1:]]
                self.assertIn(rest, ([], ["copy_region"], ["SystemInit"], ["main"], ["main", "boot_verify"],
                                     ["main", "boot_verify", "boot_crc32"]), frames)
            else:
                self.assertTrue(chain_fits_the_tree([f.removesuffix(app_suffix) for f in frames]), frames)
        self.assertEqual(counted, n)

    def test_diff_of_the_pair_reopens_both_images_and_names_every_sample(self):
        # Issue 50's case: the bootloader first, as docs/stacks.md records the pair; the
        # recording names both images, and diff reopens them without --elf.
        doc, census = self.record("pair", "--elf", str(self.boot), "--elf", str(self.app))
        truth = census_by_function(census, [self.boot, self.app])
        self.assertEqual(rows_off_the_census(doc, truth), [])
        rec, n = self.work / "pair.bin", doc["samples"]
        diff = json.loads(mcuprof("diff", str(rec), str(rec), "--format", "json"))
        self.assertEqual((diff["a"]["samples"], diff["b"]["samples"]), (n, n))
        rows = {row["name"]: row for row in diff["rows"]}
        self.assertNotIn("?", rows)
        self.assertEqual(sum(row["a_samples"] for row in rows.values()), n)
        self.assertIn("boot_crc32", rows)
        self.assertIn("mix_step", rows)
        # Each row a function of one image or the other, at its census share.
        address = {row["name"]: row["address"] for row in doc["functions"] if "address" in row}
        sampled = [name for name, row in rows.items() if row["a_samples"] > 0]
        self.assertLessEqual(set(sampled), set(address), "rows the report does not name")
        as_report = {"samples": n, "functions": [{"name": name, "address": address[name],
                                                  "samples": rows[name]["a_samples"]} for name in sampled]}
        self.assertEqual(rows_off_the_census(as_report, truth), [])
        # Given both --elf, the same rows; given one, the other image's samples are under '?'.
        given = json.loads(mcuprof("diff", str(rec), str(rec), "--elf", str(self.boot), "--elf", str(self.app),
                                   "--format", "json"))
        self.assertEqual(given["rows"], diff["rows"])
        one = json.loads(mcuprof("diff", str(rec), str(rec), "--elf", str(self.boot), "--format", "json"))
        self.assertIn("?", {row["name"] for row in one["rows"]})

    def test_firmware_check_of_both_images(self):
        app = fwtest.elf_path("vendor_app_forever_m4")
        wrong_boot = fwtest.elf_path("loops_forever_m4")
        for halted in (True, False):
            with self.subTest(halted_at_reset=halted), \
                    qemu_runner.QemuRun(app, gdb=True, halted=halted, qmp=True, uart=None, timeout=600,
                                        extra_args=["-device", f"loader,file={self.boot}"]) as q:
                def record(*elves: Path) -> subprocess.CompletedProcess:
                    return run_mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "200",
                                       "--interval", "200us", *(a for e in elves for a in ("--elf", str(e))),
                                       "-o", str(self.work / "check.bin"))
                for right in ((app, self.boot), (app,), (self.boot, app)):   # each at its own addresses
                    r = record(*right)
                    self.assertEqual(r.returncode, 0, f"{right}: {r.stderr}")
                r = record(app, wrong_boot)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f" of {wrong_boot} differs", r.stderr)
                self.assertEqual(len([l for l in r.stderr.splitlines() if l.strip()]), 1, r.stderr)
                self.assertEqual(q.qmp("query-status")["status"], "running")


if __name__ == "__main__":
    unittest.main()
