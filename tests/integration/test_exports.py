"""pprof, Firefox Profiler and the diff gate, read by their real consumers, on a recording with
call stacks of the call-tree scenario at -O2 (inlined code) replayed in QEMU, and on the truth
plugin's counts of the same run.

- pprof: `go tool pprof -top` (Debian's golang-go) reads the gzipped profile.proto; its flat and
  cumulative counts per function equal the JSON report's samples and inclusive samples
  (`-noinlines` against the symbol table's functions, the default against `--inline`).
- firefox: every field the processed profile format version 70 requires, as the profiler's type
  definitions give them (firefox-devtools/profiler, src/types/profile.ts: ProfileMeta, RawThread,
  RawSamplesTable, RawStackTable, RawFrameTable, FuncTable, SourceTable, ...), with its kind;
  the tables' lengths and indices are consistent; the samples are the recording's own, in
  order: times and PCs read here from the recording file (docs/formats.md), not by mcuprof.
- html: the timeline of a recording's page in headless Chromium, each slice's share computed
  here from the recording file.
- diff --fail-above: the exit status and the rows named follow from the two JSON reports with
  the z-score computed here (docs/usage.md, diff); --format markdown's verdict and table agree.
"""
import gzip
import json
import math
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path

import fwtest
import run_header
from fwtest import CLI, _missing, qemu_runner

ELF_NAME = "calltree_o2_m4"
SAMPLES = 1500
Z = 3.0   # diff's default threshold


def mcuprof(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"mcuprof {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
    return proc


def report_json(path: Path, elf: Path, *extra: str) -> dict:
    return json.loads(mcuprof("report", str(path), "--elf", str(elf), "--format", "json", *extra).stdout)


class Recorded:
    """One run of the image recorded by QEMU with the truth plugin, then replayed under
    `mcuprof record --stacks` paced by instructions (test_live_rsp.py does the same)."""
    work: Path
    elf: Path
    rec: Path
    truth: Path

    @classmethod
    def make(cls) -> "Recorded":
        r = cls()
        r.elf = fwtest.elf_path(ELF_NAME)
        r.work = Path(tempfile.mkdtemp(prefix="mcuprof-exports-"))
        rr, r.truth, r.rec = r.work / "rr.bin", r.work / "truth.txt", r.work / "rec.bin"
        with qemu_runner.QemuRun(r.elf, record=rr, truth=r.truth, plugin=fwtest.PLUGIN, uart=None,
                                 timeout=300) as q:
            assert q.wait() == 0
        total = sum(fwtest.read_counts(r.truth).values())
        with qemu_runner.QemuRun(r.elf, replay=rr, gdb=True, halted=True, uart=None, timeout=600) as q:
            mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--pace", "icount",
                    "--interval", str(total // SAMPLES), "--samples", str(10 * SAMPLES), "--seed", "19",
                    "--stacks", "--elf", str(r.elf), "-o", str(r.rec), "--format", "json")
            q.wait()
        return r


_recorded = None


def recorded() -> Recorded:
    global _recorded
    if _recorded is None:
        if not CLI.is_file():
            _missing(f"{CLI} is missing: build the host project")
        _recorded = Recorded.make()
    return _recorded


def tearDownModule():
    if _recorded is not None:
        shutil.rmtree(_recorded.work, ignore_errors=True)


# ---------------------------------------------------------------- pprof


def go_pprof_top(profile: Path, *options: str) -> dict[str, tuple[int, int]]:
    """go tool pprof's own table: {function: (flat, cum)}, every node kept; cum is None for
    a function shown twice (inlined and not), whose cum pprof does not add up."""
    go = shutil.which("go")
    if go is None:
        _missing("go is not installed (Debian package golang-go)")
    env = dict(os.environ, HOME=tempfile.gettempdir(), PPROF_TMPDIR=tempfile.gettempdir())
    proc = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0",
                           "-edgefraction=0", *options, str(profile)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    table = {}
    rows = False
    for line in proc.stdout.splitlines():
        if re.match(r"\s*flat\s+flat%\s+sum%\s+cum\s+cum%", line):
            rows = True
            continue
        if rows and line.strip():
            flat, _, _, cum, _, name = line.split(maxsplit=5)
            # pprof marks a function met inlined as "name (inline)"; flat adds up, cum does not.
            name = name.removesuffix(" (inline)")
            previous = table.get(name, (0, None))
            table[name] = (previous[0] + int(flat), int(cum) if previous[1] is None else None)
    assert rows, proc.stdout + proc.stderr
    return table


class Pprof(unittest.TestCase):
    def setUp(self):
        self.r = recorded()
        self.out = Path(tempfile.mkdtemp(prefix="mcuprof-pprof-"))
        self.addCleanup(shutil.rmtree, self.out, True)

    def write(self, source: Path, *extra: str) -> Path:
        path = self.out / f"{source.stem}{''.join(extra)}.pb.gz"
        mcuprof("report", str(source), "--elf", str(self.r.elf), "--format", "pprof", "-o", str(path), *extra)
        with gzip.open(path) as f:   # gzip, as pprof's files are
            f.read()
        return path

    def assertSameCounts(self, ours: dict, theirs: dict[str, tuple[int, int]], inclusive: bool):
        self.assertEqual(sum(flat for flat, _ in theirs.values()), ours["samples"])
        for row in ours["functions"]:
            flat, cum = theirs.get(row["name"], (0, 0))
            self.assertEqual(flat, row["samples"], row["name"])
            if inclusive and cum is not None:   # (None: a name met both inlined and not)
                self.assertEqual(cum, row["inclusive_samples"], row["name"])

    def test_recording_stacks_flat_and_cumulative(self):
        ours = report_json(self.r.rec, self.r.elf)
        self.assertGreaterEqual(ours["samples"], 1000)
        self.assertSameCounts(ours, go_pprof_top(self.write(self.r.rec), "-noinlines"), inclusive=True)

    def test_recording_inline_frames(self):
        # pprof's flat goes to a location's first line: the innermost inlined function, as --inline;
        # its cum counts every function on the stack, inlined ones too, as --inline's inclusive.
        ours = report_json(self.r.rec, self.r.elf, "--inline")
        self.assertSameCounts(ours, go_pprof_top(self.write(self.r.rec)), inclusive=True)

    def test_by_exception_root_frames(self):
        # By exception each chain starts at its exception's row (Thread mode, "SysTick (15) ..."),
        # as the collapsed and speedscope stacks do: pprof's cum of that root is the row's samples.
        ours = report_json(self.r.rec, self.r.elf, "--by", "exception")
        theirs = go_pprof_top(self.write(self.r.rec, "--by", "exception"), "-noinlines")
        names = {row["name"] for row in ours["functions"]}
        self.assertIn("Thread mode", names)
        self.assertTrue(any(name.startswith("SysTick (15)") for name in names), names)
        self.assertEqual(sum(flat for flat, _ in theirs.values()), ours["samples"])
        for row in ours["functions"]:
            self.assertEqual(theirs.get(row["name"], (0, 0))[1], row["samples"], row["name"])

    def test_truth_counts(self):
        ours = report_json(self.r.truth, self.r.elf)
        self.assertTrue(ours["exact"])
        self.assertSameCounts(ours, go_pprof_top(self.write(self.r.truth), "-noinlines"), inclusive=False)

    def test_needs_a_file(self):
        proc = mcuprof("report", str(self.r.truth), "--elf", str(self.r.elf), "--format", "pprof", check=False)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("-o FILE", proc.stderr)


# ---------------------------------------------------------------- Firefox Profiler

# Processed format version 70 (src/types/profile.ts). Kinds: int, num, str, bool, null, and
# unions with "|"; "int[]" a column of ints; "any" for a field whose content is not checked.
FIREFOX_VERSION = 70
FIREFOX_META = {
    "interval": "num", "startTime": "num", "processType": "int", "product": "str", "stackwalk": "int",
    "version": "int", "preprocessedProfileVersion": "int", "markerSchema": "list", "categories": "list",
}
FIREFOX_THREAD = {
    "processType": "str", "processStartupTime": "num", "processShutdownTime": "num|null",
    "registerTime": "num", "unregisterTime": "num|null", "pausedRanges": "list", "name": "str",
    "isMainThread": "bool", "pid": "str", "tid": "int|str", "samples": "dict", "markers": "dict",
}
FIREFOX_TABLES = {
    # table: {column: kind of each element}
    "samples": {"stack": "int|null", "time": "num", "weight": None, "weightType": None},
    "markers": {"data": "any", "name": "int", "startTime": "num|null", "endTime": "num|null", "phase": "int",
                "category": "int"},
    "stackTable": {"frame": "int", "prefixOffset": "int"},
    "frameTable": {"address": "int", "lib": "int", "inlineDepth": "int", "category": "int|null",
                   "subcategory": "int|null", "func": "int", "nativeSymbol": "int|null",
                   "innerWindowID": "int|null", "line": "int|null", "column": "int|null",
                   "originalLocation": "int|null"},
    "funcTable": {"name": "int", "isJS": "bool", "relevantForJS": "bool", "resource": "int",
                  "source": "int|null", "lineNumber": "int|null", "columnNumber": "int|null",
                  "originalLocation": "int|null"},
    "resourceTable": {"name": "int", "host": "int|null", "type": "int"},
    "nativeSymbols": {"libIndex": "int", "address": "int", "name": "int", "functionSize": "int|null"},
    "sources": {"id": "str|null", "filename": "int", "startLine": "int", "startColumn": "int",
                "sourceMapURL": "int|null", "content": "str|null"},
    "sourceLocationTable": {"source": "int", "line": "int", "column": "int"},
}


def is_kind(value, kind: str) -> bool:
    checks = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "num": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool),
              "null": lambda v: v is None, "list": lambda v: isinstance(v, list),
              "dict": lambda v: isinstance(v, dict), "any": lambda v: True}
    return any(checks[k](value) for k in kind.split("|"))


def read_recording(path: Path) -> list[tuple[int, int, list[int], bool]]:
    """(time ns, pc, callers innermost first, truncated) per sample, from the file's layout."""
    data = path.read_bytes()
    at = run_header.records_start(data, str(path))
    samples = []
    while at + 8 <= len(data):
        kind, length, _crc = struct.unpack_from("<HHI", data, at)
        payload = data[at + 8: at + 8 + length]
        at += 8 + length
        if kind == 1:
            time_ns, pc = struct.unpack_from("<QI", payload)
            samples.append((time_ns, pc, [], False))
        elif kind == 4:
            flags, *callers = struct.unpack(f"<{len(payload) // 4}I", payload)
            time_ns, pc, _, _ = samples[-1]
            samples[-1] = (time_ns, pc, callers, bool(flags & 1))
    return samples


class Firefox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = recorded()
        cls.doc = json.loads(mcuprof("report", str(cls.r.rec), "--elf", str(cls.r.elf), "--format",
                                     "firefox").stdout)

    def check_table(self, name: str, table: dict):
        self.assertIsInstance(table.get("length"), int, name)
        for column, kind in FIREFOX_TABLES[name].items():
            self.assertIn(column, table, f"{name}.{column}")
            if kind is None:
                continue
            values = table[column]
            self.assertEqual(len(values), table["length"], f"{name}.{column}")
            bad = [v for v in values if not is_kind(v, kind)]
            self.assertEqual(bad[:3], [], f"{name}.{column} must hold {kind}")

    def test_fields_of_version_70(self):
        doc = self.doc
        self.assertEqual(doc["meta"]["preprocessedProfileVersion"], FIREFOX_VERSION)
        for key, kind in FIREFOX_META.items():
            self.assertTrue(is_kind(doc["meta"].get(key, KeyError), kind), f"meta.{key}")
        self.assertIn(doc["meta"]["stackwalk"], (0, 1))
        # At least one category, the first grey one the default; subcategory 0 is "Other".
        categories = doc["meta"]["categories"]
        self.assertTrue(any(c["color"] == "grey" for c in categories))
        self.assertTrue(all(c["subcategories"] and c["subcategories"][0] == "Other" for c in categories))
        self.assertIsInstance(doc["libs"], list)
        shared = doc["shared"]
        self.assertTrue(all(isinstance(s, str) for s in shared["stringArray"]))
        for table in ("stackTable", "frameTable", "funcTable", "resourceTable", "nativeSymbols", "sources",
                      "sourceLocationTable"):
            self.check_table(table, shared[table])
        self.assertEqual(len(doc["threads"]), 1)
        thread = doc["threads"][0]
        for key, kind in FIREFOX_THREAD.items():
            self.assertTrue(is_kind(thread.get(key, KeyError), kind), f"thread.{key}")
        self.check_table("samples", thread["samples"])
        self.check_table("markers", thread["markers"])
        self.assertIn(thread["samples"]["weightType"], ("samples", "tracing-ms", "bytes"))

    def test_indices_point_into_their_tables(self):
        shared = self.doc["shared"]
        strings = len(shared["stringArray"])
        stacks, frames, funcs = shared["stackTable"], shared["frameTable"], shared["funcTable"]
        for i, (frame, offset) in enumerate(zip(stacks["frame"], stacks["prefixOffset"])):
            self.assertTrue(0 <= frame < frames["length"])
            self.assertTrue(0 <= offset <= i)   # 0 for a root, else back to the parent
        self.assertTrue(all(0 <= f < funcs["length"] for f in frames["func"]))
        self.assertTrue(all(0 <= n < strings for n in funcs["name"]))
        self.assertTrue(all(s is None or 0 <= s < shared["sources"]["length"] for s in funcs["source"]))
        self.assertTrue(all(0 <= n < strings for n in shared["sources"]["filename"]))
        self.assertTrue(all(0 <= s < stacks["length"] for s in self.doc["threads"][0]["samples"]["stack"]))

    def test_samples_are_the_recordings_in_order(self):
        shared = self.doc["shared"]
        stacks, frames, funcs = shared["stackTable"], shared["frameTable"], shared["funcTable"]
        samples = self.doc["threads"][0]["samples"]
        recorded_samples = read_recording(self.r.rec)
        self.assertEqual(samples["length"], len(recorded_samples))
        self.assertEqual(samples["time"], sorted(samples["time"]))
        syms = fwtest.symbols(ELF_NAME)
        for (time_ns, pc, callers, truncated), stack, time in zip(recorded_samples, samples["stack"],
                                                                  samples["time"]):
            self.assertAlmostEqual(time, time_ns / 1e6, delta=1e-9)
            # Walk to the root: the code addresses at inline depth 0 are the PC, then the callers.
            addresses, names = [], []
            while True:
                frame = stacks["frame"][stack]
                if frames["inlineDepth"][frame] == 0:
                    addresses.append(frames["address"][frame])
                    names.append(shared["stringArray"][funcs["name"][frames["func"][frame]]])
                if stacks["prefixOffset"][stack] == 0:
                    break
                stack -= stacks["prefixOffset"][stack]
            if truncated:
                self.assertEqual(addresses[-1], -1)   # the [truncated] mark at the root
                self.assertEqual(names[-1], "[truncated]")
                addresses, names = addresses[:-1], names[:-1]
            self.assertEqual(addresses, [pc, *callers])
            self.assertEqual(names, [syms.lookup(a) for a in [pc, *callers]])

    def test_counts_only_input_is_refused(self):
        proc = mcuprof("report", str(self.r.truth), "--elf", str(self.r.elf), "--format", "firefox", check=False)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("firefox needs samples in the order", proc.stderr)


# ---------------------------------------------------------------- HTML timeline


class Timeline(unittest.TestCase):
    """The HTML report of a recording, loaded in headless Chromium: its timeline's series are
    the hottest functions, and each slice's share is the one computed here from the recording's
    own times and PCs, named by arm-none-eabi-nm."""

    def test_shares_per_slice_from_the_recording(self):
        from chromium_page import load_in_chromium
        r = recorded()
        work = Path(tempfile.mkdtemp(prefix="mcuprof-timeline-"))
        self.addCleanup(shutil.rmtree, work, True)
        page = work / "report.html"
        mcuprof("report", str(r.rec), "--elf", str(r.elf), "--format", "html", "-o", str(page))
        dom, _ = load_in_chromium(page)
        svg = re.search(r'<svg id="timeline"[^>]*data-slices="(\d+)"', dom)
        self.assertIsNotNone(svg, "no timeline in the page")
        slices = int(svg.group(1))
        # The page's words: the pacing as a sentence (not the header's JSON), the slice's length
        # in a unit it reads in (not "2.49e+03 ms").
        pacing = re.search(r"<dt>pacing</dt><dd>([^<]*)</dd>", dom)
        self.assertIsNotNone(pacing, "no pacing row")
        self.assertNotIn("{", pacing.group(1))
        self.assertIn("instructions on average", pacing.group(1))
        self.assertRegex(dom, r"slices of \d+(\.\d+)? (s|ms|us) of the recording")
        self.assertNotRegex(dom, r"slices of [^<]*e[+-]\d")
        series = {name: [float(v) for v in shares.split()] for name, shares in
                  re.findall(r'<polyline class="series"[^>]*data-function="([^"]+)" data-shares="([^"]+)"', dom)}

        syms = fwtest.symbols(ELF_NAME)
        samples = read_recording(r.rec)
        names = [syms.lookup(pc) for _, pc, _, _ in samples]
        hottest = sorted(set(names), key=lambda n: -names.count(n))[:5]
        self.assertEqual(set(series), set(hottest))
        start, end = samples[0][0], samples[-1][0]
        in_slice = [[] for _ in range(slices)]
        for (time_ns, _, _, _), name in zip(samples, names):
            in_slice[min(int((time_ns - start) / (end - start) * slices), slices - 1)].append(name)
        for name, shares in series.items():
            expected = [s.count(name) / len(s) if s else 0.0 for s in in_slice]
            for got, want in zip(shares, expected):
                self.assertAlmostEqual(got, want, delta=0.00006, msg=name)


class FlameGraph(unittest.TestCase):
    def test_flame_graph_in_chromium(self):
        """The interactive flame graph of the recording with stacks, used as a person would: the
        page loads with nothing on the console; the root box is every sample and the chart's
        width; the merge list gives every function its inclusive share; a click on a box zooms
        (the box becomes the chart's width, its siblings none); search highlights exactly the
        boxes whose name holds the text and counts their samples; merging a function gives one
        root as wide as its inclusive samples; [truncated] boxes are grey. Every count comes
        from the JSON report of the same recording."""
        from chromium_page import console_messages, flame_graph_actions
        r = recorded()
        work = Path(tempfile.mkdtemp(prefix="mcuprof-flame-"))
        self.addCleanup(shutil.rmtree, work, True)
        page = work / "report.html"
        mcuprof("report", str(r.rec), "--elf", str(r.elf), "--format", "html", "-o", str(page))
        rep = report_json(r.rec, r.elf)
        total = rep["samples"]
        inclusive = {f["name"]: f["inclusive_samples"] for f in rep["functions"]}
        # Act on the widest function below the whole run whose name no other name holds (so
        # that search matches its boxes only).
        alone = [n for n in inclusive if not any(n.lower() in m.lower() for m in inclusive if m != n)]
        target = max((n for n in alone if inclusive[n] <= 0.8 * total), key=lambda n: inclusive[n])
        results, log = flame_graph_actions(page, zoom=target, search=target, merge=target)
        self.assertNotIn("error", results)
        self.assertEqual(console_messages(log), [])
        width = results["chart_width"]

        roots = [b for b in results["initial"] if b["depth"] == 0]
        self.assertEqual([(b["name"], b["value"]) for b in roots], [("all", total)])
        self.assertAlmostEqual(roots[0]["width"], width, delta=0.5)
        options = {value: text for value, text in results["merge_options"] if value}
        for name, samples in inclusive.items():
            if samples > 0:
                self.assertEqual(options.get(name), f"{name} ({100 * samples / total:.2f} %)")
        truncated = [b for b in results["initial"] if b["name"] == "[truncated]"]
        self.assertEqual(sum(b["value"] for b in truncated if b["depth"] == 1), rep["truncation"]["samples"])
        self.assertEqual({b["fill"] for b in truncated}, {"#b0b0b0"} if truncated else set())

        clicked = next(b for b in results["zoomed"] if b["id"] == results["clicked"])
        self.assertEqual(clicked["name"], target)
        self.assertAlmostEqual(clicked["width"], width, delta=0.5)
        level = [b["id"] for b in results["zoomed"] if b["depth"] == clicked["depth"] and b["width"] > 0.5]
        self.assertEqual(level, [clicked["id"]])

        holds = {b["id"] for b in results["searched"] if target.lower() in b["name"].lower()}
        lit = {b["id"] for b in results["searched"] if b["fill"].lower() == "#e600e6"}
        self.assertTrue(holds)
        self.assertEqual(lit, holds)
        self.assertIn(f"search: {inclusive[target]:g} of {total:g} total samples", results["search_details"])

        merged_roots = [b for b in results["merged"] if b["depth"] == 0]
        self.assertEqual([(b["name"], b["value"]) for b in merged_roots], [(target, inclusive[target])])
        self.assertAlmostEqual(merged_roots[0]["width"], width, delta=0.5)


# ---------------------------------------------------------------- diff gate


def z_scores(a: dict, b: dict) -> dict[str, tuple[float, float]]:
    """{function: (delta pp, z)} from two JSON reports; A exact (a census), B sampled:
    z = (q - p) / sqrt(p(1-p)/N_B) (docs/usage.md, diff)."""
    assert a["exact"] and not b["exact"]
    pa = {r["name"]: r["samples"] / a["samples"] for r in a["functions"]}
    pb = {r["name"]: r["samples"] / b["samples"] for r in b["functions"]}
    out = {}
    for name in set(pa) | set(pb):
        p, q = pa.get(name, 0.0), pb.get(name, 0.0)
        se = math.sqrt(p * (1 - p) / b["samples"])
        z = (q - p) / se if se > 0 else (math.inf if q > p else -math.inf if q < p else 0.0)
        out[name] = (100 * (q - p), z)
    return out


class DiffGate(unittest.TestCase):
    """A: the truth of the -O0 build; B: the recording of the -O2 build (inlining moves time
    between functions)."""

    @classmethod
    def setUpClass(cls):
        cls.r = recorded()
        cls.a_run = fwtest.run("calltree_o0_m4")
        cls.a = report_json(cls.a_run.truth_path, cls.a_run.elf)
        cls.b = report_json(cls.r.rec, cls.r.elf)
        cls.scores = z_scores(cls.a, cls.b)
        cls.grown = sorted(d for d, z in cls.scores.values() if z > Z and d > 0)
        assert cls.grown, "the -O2 build must move time into some function"

    def gate(self, pp: float, *extra: str) -> subprocess.CompletedProcess:
        return mcuprof("diff", str(self.a_run.truth_path), str(self.r.rec), "--elf", str(self.a_run.elf),
                       "--elf-b", str(self.r.elf), "--fail-above", repr(pp), *extra, check=False)

    def expected(self, pp: float) -> set[str]:
        return {n for n, (d, z) in self.scores.items() if d > pp and z > Z}

    def test_fails_above_the_largest_growth_only(self):
        largest = self.grown[-1]
        below = self.gate(largest - 0.01)
        self.assertEqual(below.returncode, 4, below.stderr)
        named = set(re.findall(r"^mcuprof diff: (\S+) grew", below.stderr, re.M))
        self.assertEqual(named, self.expected(largest - 0.01))
        above = self.gate(largest + 0.01)
        self.assertEqual(above.returncode, 0, above.stderr)
        self.assertEqual(above.stderr, "")

    def test_markdown_verdict_and_rows(self):
        pp = self.grown[-1] - 0.01
        proc = self.gate(pp, "--format", "markdown")
        self.assertEqual(proc.returncode, 4)
        lines = proc.stdout.splitlines()
        self.assertTrue(lines[0].startswith("### mcuprof: failed, "), lines[0])
        for name in self.expected(pp):
            self.assertIn(f"`{name}`", lines[0])
        # The table: header, alignment row, then one row per flagged function with both shares.
        table = [l for l in lines if l.startswith("|")]
        self.assertEqual(table[0], "| function | A % | B % | Δ pp | z |")
        flagged = {n for n, (_, z) in self.scores.items() if abs(z) > Z}
        shown = {}
        for row in table[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            shown[cells[0]] = float(cells[3])
        self.assertEqual(set(shown), flagged)
        for name, delta in shown.items():
            self.assertAlmostEqual(delta, self.scores[name][0], delta=0.006)

    def test_bad_gate_is_a_usage_error(self):
        proc = self.gate(-1)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("--fail-above", proc.stderr)


if __name__ == "__main__":
    unittest.main()
