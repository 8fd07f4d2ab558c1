"""The C++ reference firmware (firmware-ref/src/cxx) recorded with `record --qemu --stacks`,
against oracles that are not mcuprof:

- shares: each function row, identified by its start address, within 4 standard errors,
  sqrt(p(1-p)/N), of the truth plugin's census of the same run grouped by arm-none-eabi-nm's
  symbols (start, size): the two same-named statics of unit_a.cpp and unit_b.cpp are two rows;
- names: every row's name is arm-none-eabi-c++filt's reading of the row's symbol (its JSON
  "symbol"), with " (FILE)" where two functions share that name;
- lines: every sampled address's source line (--by address) is arm-none-eabi-addr2line's
  innermost line, and a line of dsp.hpp that both template instances share is one row per instance;
- pprof: `go tool pprof -top -addresses` and `-top -lines` give, per address and per line, the
  samples of `report --by address` and `--by line`.
The images never end: each run stops at an instruction budget, so nothing depends on speed."""
from __future__ import annotations

import collections
import html
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import chromium_page
import fwtest
from elf_symbols import nm_symbols

Z = 4.0
SAMPLES = 2000
IMAGES = ("cxx_o2_m4", "cxx_lto_m4")


def mcuprof(*args: str) -> str:
    proc = subprocess.run([str(fwtest.CLI), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def cxxfilt(names: list[str]) -> list[str]:
    out = subprocess.run(["arm-none-eabi-c++filt"], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout
    return out.splitlines()


def addr2line(elf: Path, addresses: list[int]) -> dict[int, str]:
    """The innermost file:line of each address (-i prints the inline chain innermost first).
    One address per run: given many at once, binutils 2.40's addr2line answered ??:? for an
    address of the LTO image that it finds when asked alone."""
    found = {}
    for address in addresses:
        found[address] = inline_chain(elf, address)[0]
        if found[address].startswith("??"):
            found[address] = second_opinion(elf, address)
    return found


def inline_chain(elf: Path, address: int) -> list[str]:
    """The address's inline chain of file:line, innermost first (addr2line -i)."""
    out = subprocess.run(["arm-none-eabi-addr2line", "-i", "-e", str(elf), hex(address)],
                         capture_output=True, text=True, check=True).stdout
    return [line.split(" (discriminator")[0] for line in out.splitlines()]


def second_opinion(elf: Path, address: int) -> str:
    """llvm-symbolizer-19's file:line where binutils has none: Debian 13's addr2line (binutils
    2.44) answers ??:? inside GCC 14's libgcc assembly (ieee754-sf.S, whose unit has a line
    table), where binutils 2.40 and llvm-symbolizer agree on the line."""
    out = subprocess.run(["llvm-symbolizer-19", f"--obj={elf}", hex(address)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    place = out[1] if len(out) > 1 else "??:0"
    file, line = place.rsplit(":", 2)[0:2] if place.count(":") >= 2 else (place, "")
    return "??:?" if file == "??" or line in ("", "0") else f"{file}:{line}"


def go_pprof(profile: Path, *options: str) -> list[tuple[int, str]]:
    """go tool pprof -top's rows: (flat, the rest of the line: address, function, place)."""
    go = shutil.which("go")
    if go is None:
        fwtest._missing("go is not installed (Debian package golang-go)")
    env = dict(os.environ, HOME=tempfile.gettempdir(), PPROF_TMPDIR=tempfile.gettempdir())
    out = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0",
                          *options, str(profile)], capture_output=True, text=True, timeout=300, env=env,
                         check=True).stdout
    rows, table = [], False
    for line in out.splitlines():
        fields = line.split(maxsplit=5)
        if fields[:5] == ["flat", "flat%", "sum%", "cum", "cum%"]:
            table = True
        elif table and len(fields) == 6:
            rows.append((int(fields[0]), fields[5]))
    assert table, out
    return rows


class Run:
    def __init__(self, image: str, work: Path):
        self.elf = fwtest.elf_path(image)
        self.rec, census = work / f"{image}.bin", work / f"{image}.census"
        self.doc = json.loads(mcuprof("record", "--qemu", "netduinoplus2", "--elf", str(self.elf), "--instructions",
                                      "30M", "--samples", str(SAMPLES), "--seed", "5", "--stacks", "-o",
                                      str(self.rec), "--census", str(census), "--format", "json"))
        self.census = fwtest.read_counts(census)

    def report(self, *args: str) -> dict:
        return json.loads(mcuprof("report", str(self.rec), "--elf", str(self.elf), "--format", "json", *args))


class CxxFirmware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-cxx-"))
        cls.runs = {image: Run(image, cls.work) for image in IMAGES}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_shares_by_address_within_4_se_of_the_truth(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                # An address belongs to the nearest function start at or below it that spans it
                # (libgcc's float routines are entry points inside one another).
                functions = sorted({(s.start, s.size) for s in nm_symbols(run.elf, "TtWw") if s.size > 0},
                                   reverse=True)
                truth = collections.Counter()
                for address, count in run.census.items():
                    owner = next((start for start, size in functions if start <= address), None)
                    size = dict(functions).get(owner, 0)
                    truth[owner if owner is not None and address < owner + size else None] += count
                total = sum(truth.values())
                n = run.doc["samples"]
                self.assertGreater(n, SAMPLES * 0.8)
                observed = {row["address"]: row["samples"] for row in run.doc["functions"] if "address" in row}
                self.assertEqual(len(observed), len([r for r in run.doc["functions"] if "address" in r]))
                # Every row is checked before the test fails, and the failure names them all
                # with the run's facts: one row off or the whole profile shifted tell apart
                # a cause in that row's code from a run that went wrong (docs/firmware-ref.md,
                # "C++ reference firmware", the GCC 14 failure).
                checked, off = 0, []
                for start, count in sorted(truth.items(), key=lambda item: item[0] or 0):
                    p = count / total
                    if start is None or p < 0.005:
                        continue
                    q = observed.get(start, 0) / n
                    se = math.sqrt(p * (1 - p) / n)
                    checked += 1
                    if abs(q - p) > Z * se:
                        off.append(f"{hex(start)} sampled {100 * q:.3f} % truth {100 * p:.3f} % z {(q - p) / se:.2f}")
                self.assertFalse(off, f"{len(off)} of {checked} rows beyond {Z} SE, {n} samples of {total} "
                                      f"instructions, {run.doc['sampler']['end']}: " + "; ".join(off))
                self.assertGreaterEqual(checked, 5)

    def test_names_are_cxxfilt_names_one_per_function(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                rows = [r for r in run.doc["functions"] if "symbol" in r]
                self.assertGreater(len(rows), 5)
                names = [r["name"] for r in rows]
                self.assertEqual(len(set(names)), len(names))
                for row, shown in zip(rows, cxxfilt([r["symbol"] for r in rows])):
                    self.assertTrue(row["name"] == shown or row["name"].startswith(shown + " ("), row)
                # The stacks' outermost frames are those functions, by the same names.
                frames = {f["function"] for stack in run.doc["stacks"] for f in stack["frames"]}
                self.assertTrue({r["name"] for r in rows if r["samples"] > 0} <= frames)
                checksums = [r["name"] for r in run.doc["functions"] if r["name"].startswith("checksum(")]
                mixes = [r["name"] for r in run.doc["functions"] if r["name"].startswith("(anonymous namespace)::mix(")]
                self.assertEqual(len(checksums), 2, checksums)
                self.assertEqual(len(mixes), 2, mixes)

    def test_address_lines_are_addr2lines(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                rows = [r for r in run.report("--by", "address")["functions"] if "address" in r]
                expected = addr2line(run.elf, [r["address"] for r in rows])
                self.assertGreater(len(rows), 50)
                for row in rows:
                    if "location" in row:
                        self.assertEqual(row["location"], expected[row["address"]], hex(row["address"]))
                    else:
                        self.assertTrue(expected[row["address"]].startswith("??"), hex(row["address"]))

    def test_a_line_shared_by_two_instances_is_one_row_each(self):
        run = self.runs["cxx_o2_m4"]
        by_line = run.report("--by", "line")["functions"]
        instances = {"dsp::Fir<float, 16u>::push(float)", "dsp::Fir<long, 8u>::push(long)"}
        shared = collections.defaultdict(set)
        for row in by_line:
            if row["function"] in instances:
                shared[row["name"].split(" (in ")[0]].add(row["function"])
        both = [line for line, functions in shared.items() if functions == instances]
        self.assertTrue(both, shared)
        names = [r["name"] for r in by_line]
        self.assertEqual(len(set(names)), len(names))
        # Each instance's lines add up to its function row (push inlines nothing into itself).
        for function in instances:
            lines = sum(r["samples"] for r in by_line if r["function"] == function)
            row = next(r for r in run.doc["functions"] if r["name"] == function)
            self.assertEqual(lines, row["samples"], function)

    def test_pprof_addresses_and_lines_agree_with_the_report(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                profile = self.work / f"{image}.pb.gz"
                mcuprof("report", str(run.rec), "--elf", str(run.elf), "--format", "pprof", "-o", str(profile))
                by_address = collections.Counter()
                for flat, rest in go_pprof(profile, "-addresses"):   # "0000000008000bfe name place"
                    by_address[int(rest.split()[0], 16)] += flat
                ours = {r["address"]: r["samples"] for r in run.report("--by", "address")["functions"]
                        if "address" in r}
                self.assertEqual({a: c for a, c in by_address.items() if c}, ours)
                # pprof prints paths cleaned (".." folded): compare them cleaned.
                by_line = collections.Counter()
                for flat, rest in go_pprof(profile, "-lines"):
                    place = rest.removesuffix(" (inline)").rsplit(" ", 1)[-1]   # an inlined function's line
                    by_line[os.path.normpath(place)] += flat
                ours_lines = collections.Counter()
                for r in run.report("--by", "line")["functions"]:
                    ours_lines[os.path.normpath(r["name"].split(" (in ")[0])] += r["samples"]
                self.assertEqual({p: c for p, c in by_line.items() if c and ":" in p},
                                 {p: c for p, c in ours_lines.items() if ":" in p and "no line" not in p})

    def test_namesakes_are_apart_in_every_format(self):
        """Functions that share a c++filt name (nm's checksum and mix of unit_a.cpp and unit_b.cpp,
        at four addresses) and inlined functions that share a DWARF name (the lambdas'
        operator(), the two std::sort instances) are apart in every format, under the JSON
        report's labels, as each format's own reader sees them."""
        run = self.runs["cxx_o2_m4"]
        doc = run.report()
        symbols = [s for s in nm_symbols(run.elf, "TtWw") if s.size > 0]
        starts = collections.defaultdict(set)
        for symbol, shown in zip(symbols, cxxfilt([s.name for s in symbols])):
            starts[shown].add(symbol.start)
        namesakes = {name: found for name, found in starts.items() if len(found) > 1}
        self.assertEqual(set(namesakes), {"checksum(unsigned char const*, int)",
                                          "(anonymous namespace)::mix(unsigned int)"})
        rows = {r["address"]: r for r in doc["functions"] if "address" in r}
        labels = {rows[a]["name"]: rows[a]["samples"] for found in namesakes.values() for a in found}
        self.assertEqual(len(labels), 4, labels)
        frames = {f["function"] for stack in doc["stacks"] for f in stack["frames"]}
        self.assertTrue(set(labels) <= frames)
        self.assertNotIn("operator()", frames)
        # The lambdas, a few samples a run (about 0.08 % of the census each: none at all in one
        # CI run of 2000): each stack whose innermost line by addr2line is inside a lambda ends
        # in "operator() (main.cpp:LINE)", and no other stack has such a frame.
        source = fwtest.REPO / "firmware-ref" / "src" / "cxx" / "main.cpp"
        lambda_lines = {f"main.cpp:{number}" for number, text in enumerate(source.read_text().splitlines(), 1)
                        if re.search(r"\[&?\w*\]\(const app::Record&", text)}
        self.assertEqual(len(lambda_lines), 3, lambda_lines)
        leaves = [stack["frames"][-1] for stack in doc["stacks"]]
        chains = {a: [os.path.basename(place) for place in inline_chain(run.elf, a)]
                  for a in {leaf["address"] for leaf in leaves}}
        for leaf in leaves:
            chain = chains[leaf["address"]]
            # A lambda's body inlined into its caller: the innermost of two or more lines.
            inside = len(chain) > 1 and chain[0] in lambda_lines
            self.assertEqual(leaf["function"] == f"operator() ({chain[0]})", inside, (hex(leaf["address"]), chain))
        self.assertFalse({f for f in frames if f.startswith("operator() (")} - {l["function"] for l in leaves})
        self.assertGreaterEqual(len([f for f in frames if f.startswith(("std::sort<", "std::__sort<"))]), 2, frames)

        def written(fmt: str) -> Path:
            out = self.work / f"namesakes.{fmt}"
            mcuprof("report", str(run.rec), "--elf", str(run.elf), "--format", fmt, "-o", str(out))
            return out

        # The stack formats: the same frames, by the same names.
        collapsed = written("collapsed").read_text().splitlines()
        self.assertEqual({f for line in collapsed for f in line.rsplit(" ", 1)[0].split(";")}, frames)
        speedscope = json.loads(written("speedscope").read_text())
        self.assertEqual({f["name"] for f in speedscope["shared"]["frames"]}, frames)
        shared = json.loads(written("firefox").read_text())["shared"]
        self.assertEqual({shared["stringArray"][i] for i in shared["funcTable"]["name"]}, frames)
        profile = self.work / "namesakes.pb.gz"
        mcuprof("report", str(run.rec), "--elf", str(run.elf), "--format", "pprof", "-o", str(profile))
        pprof = {rest.removesuffix(" (inline)"): flat for flat, rest in go_pprof(profile)}
        # pprof shortens some names (for_each<...> reads "for_each"): none merges, and every
        # label is there whole.
        self.assertEqual(len(pprof), len(frames))
        self.assertTrue({f for f in frames if f.endswith(")") and " (" in f} <= set(pprof))
        # callgrind_annotate: one row per label, its self samples the JSON row's.
        # --threshold=100: by default callgrind_annotate stops listing once 99 % of the events
        # are shown, and a namesake with a few samples fell under it.
        annotated = subprocess.run(["callgrind_annotate", "--threshold=100", str(written("callgrind"))],
                                   capture_output=True, text=True, check=True).stdout
        for label, samples in labels.items():
            self.assertEqual(pprof[label], samples, label)
            found = [line for line in annotated.splitlines() if line.endswith(":" + label)]
            self.assertEqual(len(found), 1, label)
            self.assertEqual(int(found[0].split()[0].replace(",", "")), samples, label)
        # gprof reads the ELF's symbols itself: two rows of each name, with the two rows' shares.
        flat = subprocess.run(["arm-none-eabi-gprof", "-b", "-p", str(run.elf), str(written("gmon"))],
                              capture_output=True, text=True, check=True).stdout
        for name in namesakes:
            gprof = sorted(float(line.split()[0]) for line in flat.splitlines() if line.endswith(" " + name))
            ours = sorted(r["percent"] for r in doc["functions"] if r["name"].startswith(name + " ("))
            self.assertEqual(len(gprof), 2, name)
            for theirs, mine in zip(gprof, ours):
                self.assertAlmostEqual(theirs, mine, delta=0.011, msg=name)
        # HTML: the table and the timeline's legend name each namesake whole.
        page = written("html").read_text()
        cells = {html.unescape(c) for c in re.findall(r'<td class="name">(.*?)</td>', page)}
        self.assertTrue(set(labels) <= cells)
        legend = page[page.index('<table class="legend">'):]
        legend = {html.unescape(c) for c in re.findall(r'<td class="name">(.*?)</td>', legend[:legend.index("</table>")])}
        # The legend's five hottest: whole names of function rows, unit_a's mix (a third of the
        # time) under its label.
        self.assertTrue(legend <= {r["name"] for r in doc["functions"]}, legend)
        self.assertIn("(anonymous namespace)::mix(unsigned int) (unit_a.cpp)", legend)
        # The diff against the truth: a row per label, each side's count the JSON's and the census's.
        diff = json.loads(mcuprof("diff", str(run.rec), str(self.work / "cxx_o2_m4.census"), "--elf", str(run.elf),
                                  "--format", "json"))
        diff_rows = {r["name"]: r for r in diff["rows"]}
        sizes = {s.start: s.size for s in symbols}
        for found in namesakes.values():
            for start in found:
                label = rows[start]["name"]
                census = sum(c for a, c in run.census.items() if start <= a < start + sizes[start])
                self.assertEqual((diff_rows[label]["a_samples"], diff_rows[label]["b_samples"]),
                                 (labels[label], census), label)

    def test_long_names_fold_in_text_and_wrap_in_html(self):
        run = self.runs["cxx_o2_m4"]
        for grouping in ("function", "address", "stack"):
            text = mcuprof("report", str(run.rec), "--elf", str(run.elf), "--by", grouping)
            self.assertLessEqual(max(len(line) for line in text.splitlines() if not line.startswith(("warning", "sampler"))),
                                 160, grouping)
            doc = run.report("--by", grouping)
            whole = [r["name"] + r.get("function", "") for r in doc["functions"]]
            self.assertTrue(any(len(w) > 200 for w in whole), grouping)   # JSON: whole names
            # Every row's whole name is in the text, folded: the table's name column pieces joined.
            joined = "".join(line.strip() for line in text.splitlines()).replace(" ", "")
            for row in doc["functions"]:
                self.assertIn(row["name"].replace(" ", ""), joined)
                self.assertIn(row.get("function", "").replace(" ", ""), joined)
        # The diff's table folds the same way.
        census = str(self.work / "cxx_o2_m4.census")
        text = mcuprof("diff", str(run.rec), census, "--elf", str(run.elf))
        self.assertLessEqual(max(len(line) for line in text.splitlines() if not line.startswith(("hint", "A:", "B:"))),
                             160)
        joined = "".join(line.strip() for line in text.splitlines()).replace(" ", "")
        names = [r["name"] for r in json.loads(mcuprof("diff", str(run.rec), census, "--elf", str(run.elf),
                                                       "--format", "json"))["rows"]]
        self.assertTrue(any(len(n) > 200 for n in names))
        for name in names:
            self.assertIn(name.replace(" ", ""), joined)
        page = self.work / "cxx.html"
        mcuprof("report", str(run.rec), "--elf", str(run.elf), "--format", "html", "-o", str(page))
        extents = chromium_page.table_extents(page, 1400)
        self.assertTrue(extents["tables"])
        for table in extents["tables"]:
            self.assertLessEqual(table["right"], extents["window"], table)


if __name__ == "__main__":
    unittest.main()
