#!/usr/bin/env python3
"""The command line as a user meets it: exit codes (0 ok, 1 usage, 2 bad input), one-line
errors naming the file and the place, and reports whose numbers are computed here by hand
from the symbols fixture (tests/data/elf/symbols_fixture.S: func_a 0x08000000 16 bytes,
local_b 0x08000010 14 bytes, func_c 0x08000020 8 bytes)."""
import json
import os
import re
import socket
import subprocess
import tempfile
import unittest

import cli_args

ARGS = None

# An on-chip dump after other UART text: 6 samples in func_a, 3 in local_b, 1 in func_c.
DUMP_6_3_1 = ("hello\nprof raw n=10\n"
              "p 08000000 08000002 08000004 08000006 08000008 0800000a 08000010 08000012\n"
              "p 08000014 08000020\nend\n")


def run(*args):
    return subprocess.run([ARGS.mcuprof, *args], capture_output=True, text=True, timeout=60)


class Cli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.elf = os.path.join(ARGS.fixtures, "symbols_fixture.elf")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text, mode="w"):
        path = os.path.join(self.dir.name, name)
        with open(path, mode) as f:
            f.write(text)
        return path

    def assert_one_line_error(self, result, code, *fragments):
        self.assertEqual(result.returncode, code, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        for fragment in fragments:
            self.assertIn(fragment, lines[0])

    def test_report_json_by_hand(self):
        # 6 samples in func_a, 3 in local_b, 1 in func_c: 60 / 30 / 10 %.
        dump = self.write("uart.txt", DUMP_6_3_1)
        result = run("report", dump, "--elf", self.elf, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        doc = json.loads(result.stdout)
        self.assertEqual(doc["samples"], 10)
        rows = [(r["name"], r["samples"]) for r in doc["functions"]]
        self.assertEqual(rows, [("func_a", 6), ("local_b", 3), ("func_c", 1)])
        self.assertAlmostEqual(doc["functions"][0]["percent"], 60.0)
        self.assertAlmostEqual(doc["functions"][0]["stderr"], 100 * (0.6 * 0.4 / 10) ** 0.5)

    def test_report_text_to_file(self):
        dump = self.write("uart.txt", "prof raw n=2\np 08000000 08000020\nend\n")
        out = os.path.join(self.dir.name, "report.txt")
        result = run("report", dump, "--elf", self.elf, "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out) as f:
            text = f.read()
        self.assertIn("samples 2, 2 distinct addresses, by function", text)
        self.assertIn("   50.00   35.36            1  func_a", text)

    def test_truth_command(self):
        counts = self.write("counts.txt", "0x08000000 3504\n0x08000010 1004\n0x08000020 504\n0x08000028 10\n")
        result = run("truth", counts, "--elf", self.elf, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        doc = json.loads(result.stdout)
        self.assertTrue(doc["exact"])
        self.assertEqual(doc["samples"], 5022)
        self.assertAlmostEqual(doc["functions"][0]["percent"], 100 * 3504 / 5022)
        self.assertEqual(doc["functions"][0]["stderr"], 0)

    def test_diff_json_by_hand(self):
        # A: 6 func_a, 4 local_b; B: 2 func_a, 8 local_b. Pooled share of func_a 8/20 = 0.4,
        # se = sqrt(0.4 * 0.6 * (1/10 + 1/10)) = 0.219089, z = (0.2 - 0.6) / se = -1.8257.
        a = self.write("a.txt", "prof raw n=10\np " + " ".join(["08000000"] * 6 + ["08000010"] * 2) +
                       "\np 08000010 08000010\nend\n")
        b = self.write("b.txt", "prof raw n=10\np " + " ".join(["08000000"] * 2 + ["08000010"] * 6) +
                       "\np 08000010 08000010\nend\n")
        result = run("diff", a, b, "--elf", self.elf, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = {r["name"]: r for r in json.loads(result.stdout)["rows"]}
        self.assertAlmostEqual(rows["func_a"]["z"], -1.8257, places=3)
        self.assertAlmostEqual(rows["func_a"]["delta_pp"], -40.0)
        self.assertFalse(rows["func_a"]["flagged"])
        # Counts are integers in the text (6, not 6.0); z has its 4 decimals: -1.8257.
        self.assertIn('"a_samples": 6,', result.stdout)
        self.assertEqual(rows["func_a"]["z"], -1.8257)
        self.assert_one_line_error(run("diff", a, "--elf", self.elf), 1, "two inputs")

    def test_diff_of_two_censuses_gates_on_any_move_and_on_the_totals(self):
        # A: func_a 600, local_b 400 instructions; B: func_a 601, local_b 499 (by hand:
        # 60.00 % -> 54.64 %, 40.00 % -> 45.36 %: local_b +5.36 pp; totals 1000 -> 1100, +10 %).
        a = self.write("a.truth", "0x08000000 600\n0x08000010 400\n")
        b = self.write("b.truth", "0x08000000 601\n0x08000010 499\n")
        dump = self.write("dump.txt", DUMP_6_3_1)
        result = run("diff", a, b, "--elf", self.elf, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        doc = json.loads(result.stdout)
        self.assertTrue(doc["both_exact"])
        self.assertEqual((doc["a"]["run_instructions"], doc["b"]["run_instructions"]), (1000, 1100))
        self.assertEqual(doc["total_ratio"], 1.1)
        rows = {r["name"]: r for r in doc["rows"]}
        self.assertTrue(rows["func_a"]["flagged"] and rows["local_b"]["flagged"])   # every move is real
        self.assertIsNone(rows["local_b"]["z"])                                     # infinite
        self.assertAlmostEqual(rows["local_b"]["delta_pp"], 100 * (499 / 1100 - 0.4), places=6)

        gate = run("diff", a, b, "--elf", self.elf, "--fail-above", "5")
        self.assertEqual(gate.returncode, 4, gate.stderr)
        self.assertIn("mcuprof diff: local_b grew from 40 % to 45.3636 % (z = +inf)", gate.stderr)
        self.assertIn("instructions of the whole run: A 1000, B 1100, B/A 1.100 (+10.00 %)", gate.stdout)
        self.assertIn("2 of 2 rows moved; both sides are exact counts", gate.stdout)
        self.assertEqual(run("diff", a, b, "--elf", self.elf, "--fail-above", "5.4").returncode, 0)
        total = run("diff", a, b, "--elf", self.elf, "--fail-total-above", "9.9")
        self.assertEqual(total.returncode, 4, total.stderr)
        self.assertIn("B/A 1.100 (+10.00 %), more than 9.9 % more", total.stderr)
        self.assertEqual(run("diff", a, b, "--elf", self.elf, "--fail-total-above", "10").returncode, 0)
        # A side that does not know its run's total cannot be gated on it: one line, status 2.
        self.assert_one_line_error(run("diff", a, dump, "--elf", self.elf, "--fail-total-above", "10"), 2,
                                   "dump.txt", "--fail-total-above needs the run's instruction count")

    def test_gmon_out_read_by_gprof_and_back(self):
        # 6 samples in func_a, 3 in local_b, 1 in func_c; arm-none-eabi-gprof, the format's
        # own consumer, must see the same (its "seconds" are samples at a rate of 1).
        dump = self.write("uart.txt", "prof raw n=10\np 08000000 08000002 08000004 08000006 08000008 0800000a "
                          "08000010 08000012\np 08000014 08000020\nend\n")
        gmon = os.path.join(self.dir.name, "gmon.out")
        result = run("report", dump, "--elf", self.elf, "--format", "gmon", "-o", gmon)
        self.assertEqual(result.returncode, 0, result.stderr)
        flat = subprocess.run(["arm-none-eabi-gprof", "-b", "-p", self.elf, gmon], capture_output=True, text=True,
                              check=True).stdout
        seconds = {}
        for line in flat.splitlines():
            fields = line.split()
            # gprof names func_a's address by its weak alias; mcuprof prefers the global name.
            name = {"alias_a": "func_a"}.get(fields[-1], fields[-1]) if fields else ""
            if len(fields) == 4 and name in ("func_a", "local_b", "func_c"):
                seconds[name] = float(fields[2])
        self.assertEqual(seconds, {"func_a": 6.0, "local_b": 3.0, "func_c": 1.0})
        doc = json.loads(run("report", gmon, "--elf", self.elf, "--format", "json").stdout)
        self.assertEqual([(r["name"], r["samples"]) for r in doc["functions"]],
                         [("func_a", 6), ("local_b", 3), ("func_c", 1)])
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--format", "gmon"), 1, "-o FILE")
        with open(gmon, "rb") as f:
            whole = f.read()
        cut = self.write("cut.out", whole[:-3], "wb")
        self.assert_one_line_error(run("report", cut, "--elf", self.elf), 2, cut, "ends inside a histogram count")

    def test_truth_with_two_images(self):
        # The golden test's bootloader and application: each count named after its own image.
        images = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "inputs")
        boot, app = os.path.join(images, "vendor_boot_m4.elf"), os.path.join(images, "vendor_app_m4.elf")
        start = {}
        for elf in (boot, app):
            nm = subprocess.run(["arm-none-eabi-nm", elf], capture_output=True, text=True, check=True).stdout
            for address, kind, name in (line.split() for line in nm.splitlines() if len(line.split()) == 3):
                if kind in "Tt":
                    start[name] = int(address, 16) & ~1
        crc, mix = start["boot_crc32"], start["mix_step"]
        counts = self.write("counts.txt", f"0x{crc:08x} 700\n0x{mix + 2:08x} 300\n")
        result = run("truth", counts, "--elf", boot, "--elf", app, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = [(r["name"], r["address"], r["samples"]) for r in json.loads(result.stdout)["functions"]]
        self.assertEqual(rows, [("boot_crc32", crc, 700), ("mix_step", mix, 300)])
        # Without the application, its count is in no function of the bootloader.
        result = run("truth", counts, "--elf", boot, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("mix_step", [r["name"] for r in json.loads(result.stdout)["functions"]])

    def test_gmon_out_of_code_in_flash_and_ram(self):
        # vendor_app_m4 runs ram_scale from SRAM (0x2000011c, 28 bytes) and mix_step from flash
        # (0x08004188): one histogram over both would span 384 MiB. The file holds one record
        # per stretch of code, and gprof, reading both, sees 4 samples in mix_step and 3 in
        # ram_scale, as put there.
        elf = os.path.join(os.path.dirname(__file__), "..", "golden", "inputs", "vendor_app_m4.elf")
        dump = self.write("uart.txt", "prof raw n=7\np 08004188 0800418a 0800418c 0800418e 2000011c 2000011e\n"
                          "p 20000120\nend\n")
        gmon = os.path.join(self.dir.name, "gmon.out")
        result = run("report", dump, "--elf", elf, "--format", "gmon", "-o", gmon)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("in 2 address ranges", result.stderr)
        self.assertLess(os.path.getsize(gmon), 64 * 1024)
        flat = subprocess.run(["arm-none-eabi-gprof", "-b", "-p", elf, gmon], capture_output=True, text=True,
                              check=True).stdout
        seconds = {line.split()[-1]: float(line.split()[2]) for line in flat.splitlines()
                   if len(line.split()) == 4 and line.split()[-1] in ("mix_step", "ram_scale")}
        self.assertEqual(seconds, {"mix_step": 4.0, "ram_scale": 3.0}, flat)
        doc = json.loads(run("report", gmon, "--elf", elf, "--format", "json").stdout)
        self.assertEqual({r["name"]: r["samples"] for r in doc["functions"]}, {"mix_step": 4, "ram_scale": 3})

    def test_help_and_usage(self):
        self.assertEqual(run("--help").returncode, 0)
        self.assertEqual(run("report", "--help").returncode, 0)
        self.assertIn("--elf", run("report", "--help").stdout)
        self.assertEqual(run().returncode, 1)
        self.assertEqual(run("frobnicate").returncode, 1)
        dump = self.write("uart.txt", "prof raw n=1\np 08000000\nend\n")
        self.assert_one_line_error(run("report", dump), 1, "--elf")
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--by", "colour"), 1, "colour")
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--bogus"), 1, "bogus")
        # record --batch: only with --mode pcsr (--openocd or --stlink), a whole number from 1 to 10000.
        ocd = ("record", "--openocd", "127.0.0.1:1", "--elf", self.elf, "-o", "x.bin")
        self.assert_one_line_error(run(*ocd, "--mode", "halt", "--batch", "8"), 1, "--batch goes with")
        for bad in ("0", "2.5", "20000"):
            self.assert_one_line_error(run(*ocd, "--mode", "pcsr", "--batch", bad), 1, "--batch")
        # --mode halt, pcsr or pcsr,halt; pcsr,halt takes what pcsr takes and refuses what it refuses
        # (nothing listens on port 1: an option accepted ends at the link, exit 2).
        self.assert_one_line_error(run(*ocd, "--mode", "halt,pcsr"), 1,
                                   "--mode takes halt, pcsr or pcsr,halt, not 'halt,pcsr'")
        for mode in ("pcsr", "pcsr,halt"):
            with self.subTest(mode=mode):
                for accepted in (("--batch", "8"), ("--pcsr-read", "profile")):
                    self.assert_one_line_error(run(*ocd, "--mode", mode, *accepted), 2, "127.0.0.1:1")
                self.assert_one_line_error(run(*ocd, "--mode", mode, "--stacks"), 1,
                                           f"--stacks does not go with --mode {mode}, which")
                self.assert_one_line_error(run(*ocd, "--mode", mode, "--max-halted", "50"), 1,
                                           "--max-halted goes with")
                self.assert_one_line_error(run(*ocd, "--mode", mode, "--by", "var:speed"), 1,
                                           f"--by var:NAME reads the variable at each halt, and --mode {mode}")
        # --halt-shared: halting through an stlink-server only (accepted there: the link is reached).
        st = ("record", "--stlink", "127.0.0.1:1", "--elf", self.elf, "-o", "x.bin")
        self.assert_one_line_error(run(*st, "--halt-shared"), 2, "127.0.0.1:1")
        for wrong in (("record", "--gdb", "127.0.0.1:1", "--elf", self.elf, "-o", "x.bin"), ocd,
                      ("record", "--stlink", "usb", "--elf", self.elf, "-o", "x.bin"), (*st, "--mode", "pcsr")):
            with self.subTest(link=wrong[1:3]):
                self.assert_one_line_error(run(*wrong, "--halt-shared"), 1, "--halt-shared goes with --stlink HOST")
        self.assertIn("--decay", run("top", "--help").stdout)
        self.assert_one_line_error(run("top", "--gdb", "127.0.0.1:1"), 1, "--elf")
        self.assert_one_line_error(run("top", "--elf", self.elf), 1, "--gdb")
        self.assert_one_line_error(run("top", "--gdb", "127.0.0.1:1", "--elf", self.elf, "--decay", "-5"), 1,
                                   "--decay")
        # Nothing listens on port 1: one line naming the connection, exit 2, no hang.
        self.assert_one_line_error(run("top", "--gdb", "127.0.0.1:1", "--elf", self.elf), 2, "127.0.0.1:1")
        table = self.write("table.txt", "prof topn n=3 shift=4 total=4 ignored=1 entries=1\nt 08000000 4 1000\nend\n")
        self.assertEqual(run("report", table, "--elf", self.elf).returncode, 0)

    def test_stripped_elf_gives_an_address_profile_with_a_warning(self):
        stripped = os.path.join(self.dir.name, "stripped.elf")
        subprocess.run(["arm-none-eabi-strip", "-o", stripped, self.elf], check=True)
        dump = self.write("uart.txt", "prof raw n=3\np 08000000\np 08000000\np 08000010\nend\n")
        r = run("report", dump, "--elf", stripped, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["by"], "address")
        self.assertEqual([w["kind"] for w in doc["warnings"]], ["stripped"])
        self.assertEqual({row["address"]: row["samples"] for row in doc["functions"]}, {0x08000000: 2, 0x08000010: 1})

    def test_bad_input_exit_2(self):
        dump = self.write("uart.txt", "prof raw n=1\np 08000000\nend\n")
        missing = os.path.join(self.dir.name, "missing.txt")
        self.assert_one_line_error(run("report", missing, "--elf", self.elf), 2, missing)
        self.assert_one_line_error(run("report", dump, "--elf", "/bin/sh"), 2, "/bin/sh", "not a 32-bit")
        self.assert_one_line_error(run("report", dump, "--elf", dump), 2, dump)
        junk = self.write("junk.bin", b"\x00\x01\x02garbage" * 100, "wb")
        self.assert_one_line_error(run("report", junk, "--elf", self.elf), 2, junk, "not a recognised input")
        bad = self.write("bad.txt", "prof raw n=2\np 08000000 nothex\nend\n")
        self.assert_one_line_error(run("report", bad, "--elf", self.elf), 2, bad + ", line 2", "nothex")
        empty = self.write("empty.txt", "prof raw n=0\nend\n")
        self.assert_one_line_error(run("report", empty, "--elf", self.elf), 2, "no samples")
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--by", "task"), 2, "no tags")
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--by", "exception"), 2, dump,
                                   "(IPSR)")
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--chunk", "2"), 2, "--chunk 2")

    def test_corrupt_dwarf_is_one_line_exit_2(self):
        # The layout fixture with one abbreviation's DW_AT_decl_file form changed to a block:
        # the block's length runs past its unit, and LLVM 14 read past the section (a crash,
        # exit 139, for the block4 one). readelf (binutils) gives the length independently;
        # the attribute starts at 0x238 in both (readelf --debug-dump=info, "<238>").
        corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "elf")
        dump = self.write("uart.txt", "prof raw n=1\np 08000000\nend\n")
        truth = self.write("truth.txt", "0x08000000 3\n")
        for name, form in (("block2_length_past_unit_llvm14_overread.elf", "DW_FORM_block2"),
                           ("block4_length_far_past_section_segv.elf", "DW_FORM_block4")):
            elf = os.path.join(corpus, name)
            with self.subTest(elf=name):
                peer = subprocess.run(["readelf", "--debug-dump=info", elf], capture_output=True, text=True)
                length = re.search(r"Corrupt attribute block length: (0x[0-9a-f]+)", peer.stderr)
                self.assertIsNotNone(length, peer.stderr)
                expected = (elf + ", .debug_info at 0x238", form + " value of " + length.group(1) + " bytes",
                            "runs past the end of the unit")
                self.assert_one_line_error(run("report", dump, "--elf", elf), 2, *expected)
                self.assert_one_line_error(run("truth", truth, "--elf", elf), 2, *expected)
                self.assert_one_line_error(run("diff", dump, truth, "--elf", elf), 2, *expected)
                # The unit is checked when a lookup first reads it, not before: a live command
                # reads no entry of it before its link (nothing listens on port 1), and its
                # unit headers are sound.
                self.assert_one_line_error(run("top", "--gdb", "127.0.0.1:1", "--elf", elf), 2, "nothing listens")
                samples = os.path.join(self.dir.name, "samples.bin")
                self.assert_one_line_error(run("record", "--gdb", "127.0.0.1:1", "--elf", elf, "-o", samples), 2,
                                           "nothing listens")
                self.assertFalse(os.path.exists(samples))
                # By line too: the lookup of the sampled address reads its unit.
                self.assert_one_line_error(run("report", dump, "--elf", elf, "--by", "line"), 2, *expected)

    def test_nothing_listening_says_what_to_start(self):
        with socket.socket() as s:   # a port that was free a moment ago: nothing listens there
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        where = f"127.0.0.1:{port}"
        self.assert_one_line_error(run("record", "--gdb", where, "--elf", self.elf, "-o", os.devnull), 2,
                                   f"nothing listens on {where}", "OpenOCD", f"-gdb tcp::{port}")
        self.assert_one_line_error(run("record", "--openocd", where, "--elf", self.elf, "-o", os.devnull), 2,
                                   f"nothing listens on {where}", "Tcl port is 6666")

    def test_standard_input_of_any_kind(self):
        # '-' is read as what its bytes are: a text dump and truth counts give the same
        # profile as the same file; binary bytes of no known kind are an SWO stream.
        dump = self.write("uart.txt", DUMP_6_3_1)
        truth = self.write("counts.txt", "0x08000000 6\n0x08000010 3\n0x08000020 1\n")
        for path in (dump, truth):
            with self.subTest(input=os.path.basename(path)), open(path) as f:
                piped = subprocess.run([ARGS.mcuprof, "report", "-", "--elf", self.elf, "--format", "json"],
                                       stdin=f, capture_output=True, text=True, timeout=60)
                self.assertEqual(piped.returncode, 0, piped.stderr)
                from_file = json.loads(run("report", path, "--elf", self.elf, "--format", "json").stdout)
                doc = json.loads(piped.stdout)
                self.assertEqual(doc["samples"], 10)
                self.assertEqual(doc["functions"], from_file["functions"])
        # Text of no known kind is not taken for an SWO stream ("samples 0", exit 0): it is the
        # file's one-line error, exit 2, naming standard input.
        piped = subprocess.run([ARGS.mcuprof, "report", "-", "--elf", self.elf], input="a UART log\nline two\n",
                               capture_output=True, text=True, timeout=60)
        self.assert_one_line_error(piped, 2, "standard input: not a recognised input")

    def test_unattributed_warning(self):
        # 2 of 3 samples in RAM, outside the image's code: one note naming where.
        dump = self.write("uart.txt", "prof raw n=3\np 20000000 20000004 08000000\nend\n")
        result = run("report", dump, "--elf", self.elf)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("warning: 2 of 3 samples (66.7 %) ran outside the code of " + self.elf +
                      ", at 0x20000000-0x20000004 (2): another image's code", result.stdout)
        self.assertNotIn("fall in no function", result.stdout)   # one note for the two samples

    def test_report_calls_errors(self):
        # A format call graphs do not have is a usage error; a missing stream a one-line error.
        stream = self.write("calls.swo", b"\0\0\0\0\0\x80", "wb")
        self.assertEqual(run("report", stream, "--elf", self.elf, "--calls", "--format", "gmon").returncode, 1)
        self.assert_one_line_error(run("report", stream + ".missing", "--elf", self.elf, "--calls"), 2,
                                   "calls.swo.missing", "cannot open")
        # A stream with no records: an empty graph and a note that says why there may be none.
        result = run("report", stream, "--elf", self.elf, "--calls", "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        doc = json.loads(result.stdout)
        self.assertEqual((doc["functions"], doc["edges"], doc["total"]), ([], [], 0))
        self.assertIn("no call records", doc["warnings"][0])

    def test_progress_bar_on_a_terminal_only(self):
        # 7.8 MB of truth counts (over the 4 MiB step between reports): func_a 600000 x 1 + 3, local_b 3.
        lines = ["0x08000000 1\n"] * 600000 + ["0x08000000 3\n", "0x08000010 3\n"]
        truth = self.write("counts.txt", "".join(lines))
        result = run("report", truth, "--elf", self.elf, "--format", "json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")                 # not a terminal: no progress
        self.assertEqual(json.loads(result.stdout)["samples"], 600006)
        # script(1) gives the command a terminal; the bar goes to standard error there.
        command = " ".join([ARGS.mcuprof, "report", truth, "--elf", self.elf, "--top", "1"])
        tty = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=60)
        self.assertEqual(tty.returncode, 0, tty.stdout)
        self.assertRegex(tty.stdout, r"mcuprof: reading .*counts\.txt \[#+\.*\] +\d+ %")
        self.assertIn("func_a", tty.stdout)

    def test_stack_formats_by_hand(self):
        # 6 samples in func_a, 3 in local_b, 1 in func_c: one-frame stacks.
        dump = self.write("uart.txt", DUMP_6_3_1)
        collapsed = run("report", dump, "--elf", self.elf, "--format", "collapsed")
        self.assertEqual(collapsed.returncode, 0, collapsed.stderr)
        self.assertEqual(collapsed.stdout, "func_a 6\nlocal_b 3\nfunc_c 1\n")
        speedscope = run("report", dump, "--elf", self.elf, "--format", "speedscope")
        doc = json.loads(speedscope.stdout)
        self.assertEqual(doc["profiles"][0]["weights"], [6, 3, 1])
        html = os.path.join(self.dir.name, "report.html")
        self.assertEqual(run("report", dump, "--elf", self.elf, "--format", "html", "-o", html).returncode, 0)
        with open(html) as f:
            self.assertEqual(f.read().count('<tr><td class="name">'), 3)
        self.assert_one_line_error(run("report", dump, "--elf", self.elf, "--format", "svg"), 1, "svg")

    def test_diff_formats(self):
        a = self.write("a.txt", "prof raw n=4\np 08000000 08000002 08000010 08000020\nend\n")
        b = self.write("b.txt", "prof raw n=4\np 08000000 08000010 08000012 08000020\nend\n")
        html = os.path.join(self.dir.name, "diff.html")
        result = run("diff", a, b, "--elf", self.elf, "--format", "html", "-o", html)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(html) as f:
            page = f.read()
        for name in ("func_a", "local_b", "func_c"):
            self.assertIn(f'<td class="name">{name}</td>', page)
        doc = json.loads(run("diff", a, b, "--elf", self.elf, "--format", "json").stdout)
        self.assertEqual(doc["hints"], [])   # two on-chip dumps alike: no trap to name
        self.assert_one_line_error(run("diff", a, b, "--elf", self.elf, "--format", "collapsed"), 1, "collapsed")


if __name__ == "__main__":
    cli_args.main(globals())
