"""The report formats read by their real consumers, on reference firmware runs.

- collapsed: flamegraph.pl's grammar (Debian has no flamegraph package), counts adding up to
  the JSON report's total, leaf frames adding up to its rows (--inline: the leaf is the
  innermost inlined function).
- speedscope: the checks of speedscope's file-format schema (written out below from
  https://www.speedscope.app/file-format-schema.json; the schema itself is not stored here).
- callgrind: callgrind_annotate (valgrind) reads it; its totals and per-function inclusive
  figures equal the JSON report's.
- html: headless Chromium loads the page; the DOM's table rows are the JSON's functions,
  the icicle's boxes (drawn by d3-flame-graph) exist, nothing was written to the console and
  no request was attempted (the page's CSP blocks every request and Chromium logs each one;
  negative controls prove the log shows both). The flame graph's zoom, search and merge are
  checked on a recording with stacks in test_exports.py (flame_graph_actions, below).
  A screenshot is saved next to the build (report-artifacts/).
- diff: the hints name the trap of scenarios 3 and 4 from the data, and not for the control.
"""
import json
import re
import shutil
import subprocess
import tempfile
import unittest
from html.parser import HTMLParser
from pathlib import Path

from chromium_page import blocked_requests, console_messages, load_in_chromium
from fwtest import CLI, IntegrationCase, _missing, rows, run

ARTIFACTS = CLI.parent / "report-artifacts"
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SPEEDSCOPE_UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


def mcuprof(*args: str) -> str:
    proc = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
    return proc.stdout


def report_json(input_path, elf, *extra) -> dict:
    return json.loads(mcuprof("report", str(input_path), "--elf", str(elf), "--format", "json", *extra))


class Dom(HTMLParser):
    """What the tests look at in a page: table rows by table id, boxes, hints, the CSP."""

    def __init__(self, text: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.frames: list[str] = []
        self.hints: list[str] = []
        self.csp = ""
        self._table = None
        self._cell = None
        self._hint = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = ""
        elif tag == "g" and "frame" in a.get("class", "").split():
            self.frames.append(a.get("name", ""))   # d3-flame-graph names each box
        elif tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content", "")
        elif tag == "p" and "hint" in a.get("class", "").split():
            self._hint = a.get("data-kind", "")

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append(self._cell.strip())
            self._cell = None
        elif tag == "p" and self._hint is not None:
            self.hints.append(self._hint)
            self._hint = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def check_speedscope(doc: dict) -> None:
    """The constraints of speedscope's file-format schema for a file of sampled profiles."""
    assert doc["$schema"] == SPEEDSCOPE_SCHEMA
    assert set(doc) <= {"$schema", "shared", "profiles", "name", "activeProfileIndex", "exporter"}, set(doc)
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list) and frames
    for f in frames:
        assert isinstance(f["name"], str)
        assert set(f) <= {"name", "file", "line", "col"}, f
        assert isinstance(f.get("file", ""), str)
        for key in ("line", "col"):
            assert isinstance(f.get(key, 0), (int, float))
    assert isinstance(doc.get("name", ""), str) and isinstance(doc.get("exporter", ""), str)
    assert isinstance(doc.get("activeProfileIndex", 0), (int, float))
    for p in doc["profiles"]:
        assert p["type"] == "sampled"
        assert set(p) == {"type", "name", "unit", "startValue", "endValue", "samples", "weights"}, set(p)
        assert isinstance(p["name"], str) and p["unit"] in SPEEDSCOPE_UNITS
        assert all(isinstance(p[k], (int, float)) for k in ("startValue", "endValue"))
        assert len(p["samples"]) == len(p["weights"])
        for stack in p["samples"]:
            assert all(isinstance(i, int) and 0 <= i < len(frames) for i in stack), stack
        assert all(isinstance(w, (int, float)) and w >= 0 for w in p["weights"])


class StackFormats(IntegrationCase):
    NAME = "loops_jit_m4"

    def setUp(self):
        self.run_ = run(self.NAME)
        self.dir = Path(tempfile.mkdtemp(prefix="mcuprof-formats-"))
        self.addCleanup(shutil.rmtree, self.dir, True)

    def inputs(self):
        r = self.run_
        return {"dump": r.dump_path, "truth": r.truth_path}

    def test_collapsed_grammar_and_counts(self):
        line_re = re.compile(r"^([^;\s][^;\n]*)(;[^;\n]+)* (\d+(\.\d+)?)$")
        for kind, path in self.inputs().items():
            with self.subTest(input=kind):
                text = mcuprof("report", str(path), "--elf", str(self.run_.elf), "--format", "collapsed",
                               "--inline")
                lines = text.splitlines()
                self.assertTrue(lines)
                leaves = {}
                for line in lines:
                    m = line_re.match(line)
                    self.assertIsNotNone(m, f"not a collapsed line: {line!r}")
                    stack, count = line.rsplit(" ", 1)
                    leaf = stack.split(";")[-1]
                    leaves[leaf] = leaves.get(leaf, 0) + float(count)
                rep = report_json(path, self.run_.elf, "--inline")
                self.assertAlmostEqual(sum(leaves.values()), rep["samples"], places=3)
                for name, r in rows(rep).items():
                    self.assertAlmostEqual(leaves.get(name, 0), r["samples"], places=3, msg=name)

    def test_speedscope_schema_and_weights(self):
        for kind, path in self.inputs().items():
            with self.subTest(input=kind):
                doc = json.loads(mcuprof("report", str(path), "--elf", str(self.run_.elf), "--format", "speedscope"))
                check_speedscope(doc)
                rep = report_json(path, self.run_.elf)
                p = doc["profiles"][0]
                self.assertAlmostEqual(sum(p["weights"]), rep["samples"], places=3)
                self.assertAlmostEqual(p["endValue"], rep["samples"], places=3)

    def test_callgrind_annotate_reads_the_totals(self):
        if not shutil.which("callgrind_annotate"):
            _missing("callgrind_annotate is not installed (Debian package valgrind)")
        for kind, path in self.inputs().items():
            with self.subTest(input=kind):
                out = self.dir / f"{kind}.callgrind"
                mcuprof("report", str(path), "--elf", str(self.run_.elf), "--format", "callgrind", "-o", str(out))
                annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                                           capture_output=True, text=True, timeout=60)
                self.assertEqual(annotated.returncode, 0, annotated.stderr)
                rep = report_json(path, self.run_.elf)
                total = re.search(r"^([\d,]+) \S+\s+PROGRAM TOTALS", annotated.stdout, re.M)
                self.assertIsNotNone(total, annotated.stdout)
                self.assertEqual(int(total.group(1).replace(",", "")), round(rep["samples"]))
                inclusive = {}
                for m in re.finditer(r"^\s*([\d,]+) \([ \d.]+%\)\s+(\S.*):([^:\s]+)\s*$", annotated.stdout, re.M):
                    inclusive[m.group(3)] = int(m.group(1).replace(",", ""))
                for name, r in rows(rep).items():
                    if round(r["inclusive_samples"]) > 0:
                        self.assertEqual(inclusive.get(name), round(r["inclusive_samples"]), name)


class HtmlReport(IntegrationCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="mcuprof-html-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def test_profile_page_in_chromium(self):
        r = run("loops_jit_m4")
        page = self.dir / "report.html"
        mcuprof("report", str(r.dump_path), "--elf", str(r.elf), "--format", "html", "-o", str(page))
        dom_text, log = load_in_chromium(page, ARTIFACTS / "report.png")
        dom = Dom(dom_text)
        rep = report_json(r.dump_path, r.elf)
        self.assertTrue(dom.csp.startswith("default-src 'none'"), dom.csp)
        table = [row for row in dom.tables["profile"] if row and row[0] != "function"]
        self.assertEqual([row[0] for row in table], [f["name"] for f in rep["functions"]])
        for row, f in zip(table, rep["functions"]):
            self.assertAlmostEqual(float(row[1]), f["percent"], places=2)
        # The icicle (a flat profile): the root and a box for each function of 1 % or more.
        self.assertEqual(dom.frames[0], "all")
        for f in rep["functions"]:
            if f["percent"] >= 1:
                self.assertIn(f["name"], dom.frames)
        self.assertEqual(blocked_requests(log), [])
        self.assertEqual(console_messages(log), [])   # d3 and d3-flame-graph ran without a word
        self.assertIn("<pre class=\"source\">", dom_text)   # the sources are in this tree

    def log_of_spoiled_page(self, markup: str) -> str:
        """Chromium's log for the report page with `markup` put before its heading."""
        r = run("loops_jit_m4")
        page = self.dir / "report.html"
        mcuprof("report", str(r.dump_path), "--elf", str(r.elf), "--format", "html", "-o", str(page))
        bad = self.dir / "bad.html"
        bad.write_text(page.read_text().replace("<h1>", markup + "<h1>", 1))
        return load_in_chromium(bad)[1]

    def test_console_errors_are_seen(self):
        """Negative control: a script that throws is in the log, so an empty list above means
        the page's scripts ran without an error."""
        log = self.log_of_spoiled_page("<script>undefinedFunction()</script>")
        self.assertEqual(len(console_messages(log)), 1, log[-2000:])

    def test_blocked_requests_are_seen(self):
        """Negative control: a page that asks for an image gets it blocked, and the log says so."""
        log = self.log_of_spoiled_page("<img src=\"http://192.0.2.1/x.png\">")
        self.assertEqual(len(blocked_requests(log)), 1, log[-2000:])

    def test_diff_page_in_chromium(self):
        r = run("irqoff_m4")
        page = self.dir / "diff.html"
        mcuprof("diff", str(r.truth_path), str(r.dump_path), "--elf", str(r.elf), "--format", "html", "-o", str(page))
        dom_text, log = load_in_chromium(page, ARTIFACTS / "diff.png")
        dom = Dom(dom_text)
        self.assertIn("interrupt-shadow", dom.hints)
        diff = json.loads(mcuprof("diff", str(r.truth_path), str(r.dump_path), "--elf", str(r.elf),
                                  "--format", "json"))
        table = [row for row in dom.tables["diff"] if row and row[0] != "name"]
        self.assertEqual([row[0].removeprefix("* ") for row in table], [x["name"] for x in diff["rows"]])
        self.assertEqual(blocked_requests(log), [])


class DiffHints(IntegrationCase):
    def hints(self, name, *options):
        r = run(name)
        diff = json.loads(mcuprof("diff", str(r.truth_path), str(r.dump_path), "--elf", str(r.elf),
                                  "--format", "json", *options))
        return {(h["kind"], h["function"]) for h in diff["hints"]}

    def test_scenario3_region_time_after_cpsie(self):
        self.assertIn(("interrupt-shadow", "irq_on"), self.hints("irqoff_m4"))

    def test_scenario3_by_line_gives_the_same_diagnosis(self):
        # By line the rows are irq_on's lines and the masked loop's: the gain after cpsie i is
        # the interrupt shadow, and the masked lines that lost it are no invisible handler.
        hints = self.hints("irqoff_m4", "--by", "line")
        kinds = {kind for kind, _ in hints}
        self.assertIn("interrupt-shadow", kinds, hints)
        self.assertNotIn("invisible-handler", kinds, hints)
        irq_on = {row["name"] for row in json.loads(mcuprof("report", str(run("irqoff_m4").dump_path), "--elf",
                                                            str(run("irqoff_m4").elf), "--by", "line",
                                                            "--format", "json"))["functions"]
                  if row.get("function") == "irq_on"}
        self.assertTrue({f for kind, f in hints if kind == "interrupt-shadow"} <= irq_on, (hints, irq_on))

    def test_scenario4_equal_priority_handler(self):
        self.assertIn(("invisible-handler", "isr_work"), self.hints("isr_eq_m4"))
        # Control: the handler at a less urgent priority is seen, and no hint is given.
        self.assertFalse({h for h in self.hints("isr_low_m4") if h[0] == "invisible-handler"})

    def test_scenario1_lockstep(self):
        self.assertIn(("lockstep", ""), self.hints("loops_m4"))


if __name__ == "__main__":
    unittest.main()
