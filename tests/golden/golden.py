"""The golden test's cases and their running, shared by test_golden.py and regenerate.py.

Every case is one mcuprof command line on the fixed inputs (inputs/), run with a scratch copy
of inputs/ as its working directory so that every path it names is relative. What a case
produced is its output (standard output, or the file it wrote with -o for the binary formats)
and, when the command said anything on standard error or ended with a status other than 0,
both, kept beside it as `NAME.err` ("exit N" on the first line, then standard error).

Stored under expected/ byte for byte, with two exceptions, both lossless:
- HTML pages carry d3 and d3-flame-graph inline, about 290 KB of the same script in every
  page; a plain <script> block of 16 KB or more is stored once, as expected/_assets/SHA.js
  (the first 16 hex digits of its SHA-256), and the page keeps `@@golden-asset SHA@@` in its
  place. expand() puts it back, and the comparison is of the whole page's bytes.
- normalise(), below, the one place where an output is changed before it is compared.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import difflib
import gzip
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INPUTS = HERE / "inputs"
EXPECTED = HERE / "expected"
ASSETS = EXPECTED / "_assets"
# The tool under test: the build the other Python tests use (tests/pylib/fwtest.py).
CLI = Path(os.environ.get("MCUPROF_CLI", REPO / "build" / "mcuprof"))

PROFILE_FORMATS = ("text", "json", "html", "collapsed", "speedscope", "callgrind", "pprof", "firefox", "gmon")
DIFF_FORMATS = ("text", "json", "html", "markdown")
CALL_GRAPH_FORMATS = ("text", "json", "callgrind", "dot")
BINARY_FORMATS = {"pprof", "gmon"}   # written with -o only
EXTENSION = {"text": "txt", "json": "json", "html": "html", "collapsed": "folded", "speedscope": "speedscope.json",
             "callgrind": "callgrind", "pprof": "pb.gz", "firefox": "firefox.json", "gmon": "gmon.out",
             "markdown": "md", "dot": "dot"}
REOPENED = "reopened"     # the scratch folder of the recordings whose header names this run's ELFs


@dataclasses.dataclass(frozen=True)
class Case:
    path: str                 # the expected output, relative to expected/
    argv: tuple[str, ...]     # mcuprof's arguments
    binary: bool = False      # the output is the file written with -o, compared as bytes


# ---------------------------------------------------------------- the cases

# input -> (the --elf arguments, the groupings that apply to it). "+inline" is --inline.
REPORTS = {
    "flat.rec": (("--elf", "loops_chunks_m4.elf"), ("function", "line", "address", "stack", "exception", "function+inline")),
    "stacks.rec": (("--elf", "calltree_o2_m4.elf"), ("function", "line", "address", "stack", "exception", "function+inline")),
    "rtos.rec": (("--elf", "rtos_m4.elf"), ("function", "line", "address", "stack", "task", "exception", "function+inline")),
    "state.rec": (("--elf", "state_m4.elf"), ("function", "var:app_state", "exception")),
    "dual.rec": (("--elf", "dualtasks_freertos_an521.elf"), ("function", "line", "address", "stack", "task", "core",
                                                            "exception")),
    "pair.rec": (("--elf", "vendor_boot_m4.elf", "--elf", "vendor_app_m4.elf"),
                 ("function", "line", "address", "stack", "exception", "function+inline")),
    "pcsr.rec": (("--elf", "mixed_forever_m4.elf"), ("function", "line", "address", "stack", "function+inline")),
    "pcsr_profile.rec": (("--elf", "mixed_forever_m4.elf"), ("function", "line", "address", "stack")),
    "halt_openocd.rec": (("--elf", "mixed_forever_m4.elf"), ("function", "line", "address", "stack", "exception")),
    "gmon.out": (("--elf", "mixed_forever_m4.elf"), ("function", "line", "address", "stack")),
    "swo.bin": (("--elf", "loops_chunks_m4.elf"), ("function", "line", "address", "stack", "function+sync")),
    "calls.swo": (("--elf", "calls_m4.elf"), ("function",)),
    "uart.txt": (("--elf", "loops_chunks_m4.elf"), ("function", "line", "address", "stack", "function+inline",
                                                    "function+chunk2", "function+first500")),
    "rtos_uart.txt": (("--elf", "rtos_m4.elf"), ("function", "line", "task")),
    "hist_uart.txt": (("--elf", "loops_hist4_m4.elf"), ("function", "line", "address", "stack")),
    "topn_uart.txt": (("--elf", "phase_topn_m4.elf"), ("function", "address")),
    "counts.txt": (("--elf", "loops_chunks_m4.elf"), ("function", "line", "address", "stack", "function+inline")),
    "dual_counts.txt": (("--elf", "dual_an521.elf"), ("function", "core")),
}
EXTRA = {"inline": ("--inline",), "sync": ("--sync",), "chunk2": ("--chunk", "2"), "first500": ("--first", "500")}

TRUTHS = {"counts.txt": (("--elf", "loops_chunks_m4.elf"), ("function", "line", "address", "stack", "function+inline")),
          "dual_counts.txt": (("--elf", "dual_an521.elf"), ("function",))}

# name -> (A, B, options): every diff in every diff format.
DIFFS = {
    "flat-vs-census": ("flat.rec", "counts.txt", ("--elf", "loops_chunks_m4.elf")),
    "onchip-vs-census": ("uart.txt", "counts.txt", ("--elf", "loops_chunks_m4.elf")),
    "flat-vs-onchip-by-line": ("flat.rec", "uart.txt", ("--elf", "loops_chunks_m4.elf", "--by", "line",
                                                         "--threshold", "2")),
    "pcsr-vs-halt": ("pcsr.rec", "halt_openocd.rec", ("--elf", "mixed_forever_m4.elf")),
    "pair-vs-pair": ("pair.rec", "pair.rec", ("--elf", "vendor_boot_m4.elf")),   # issue 50: 69.68 % under '?'
    # ... with both images (issue 50: nothing under '?'), given or reopened from the recordings
    "pair-two-elves": ("pair.rec", "pair.rec", ("--elf", "vendor_boot_m4.elf", "--elf", "vendor_app_m4.elf")),
    "pair-reopened": (f"{REOPENED}/pair.rec", f"{REOPENED}/pair.rec", ()),
    "dual-core1": ("dual.rec", "dual.rec", ("--elf", "dualtasks_freertos_an521.elf", "--core", "1")),
    "rtos-vs-onchip-by-task": ("rtos.rec", "rtos_uart.txt", ("--elf", "rtos_m4.elf", "--by", "task")),
    "two-firmwares-gate": ("flat.rec", "stacks.rec", ("--elf", "loops_chunks_m4.elf", "--elf-b", "calltree_o2_m4.elf",
                                                      "--fail-above", "2")),
    "two-censuses-gate": ("counts.txt", "counts.txt", ("--elf", "loops_chunks_m4.elf", "--fail-total-above", "5")),
}

# Single command lines: name -> arguments (each a case of its own, standard output).
SINGLES = {
    # the profile's text table cut to N rows
    "report/flat.rec/function-top5.txt": ("report", "flat.rec", "--elf", "loops_chunks_m4.elf", "--top", "5"),
    "report/stacks.rec/stack-top5.txt": ("report", "stacks.rec", "--elf", "calltree_o2_m4.elf", "--by", "stack",
                                         "--top", "5"),
    "diff/flat-vs-census/top3.txt": ("diff", "flat.rec", "counts.txt", "--elf", "loops_chunks_m4.elf", "--top", "3"),
    # SWO: the packets listed; --calls, the instrumented call graph
    "packets/swo.bin.txt": ("report", "swo.bin", "--packets"),
    "packets/swo.bin-sync.txt": ("report", "swo.bin", "--packets", "--sync"),
    "packets/calls.swo.txt": ("report", "calls.swo", "--packets"),
    "calls/calls.swo/channel2.txt": ("report", "calls.swo", "--elf", "calls_m4.elf", "--calls", "--channel", "2"),
    # the recording against another firmware: the elf-mismatch warning, and --strict's error
    "mismatch/flat.rec-other-elf.txt": ("report", "flat.rec", "--elf", "calltree_o2_m4.elf"),
    "mismatch/flat.rec-other-elf-json.json": ("report", "flat.rec", "--elf", "calltree_o2_m4.elf", "--format", "json"),
    "mismatch/flat.rec-strict.txt": ("report", "flat.rec", "--elf", "calltree_o2_m4.elf", "--strict"),
    # refusals: one line on standard error and the exit status
    "refused/flat.rec-by-task.txt": ("report", "flat.rec", "--elf", "loops_chunks_m4.elf", "--by", "task"),
    "refused/flat.rec-by-core.txt": ("report", "flat.rec", "--elf", "loops_chunks_m4.elf", "--by", "core"),
    "refused/pcsr.rec-by-exception.txt": ("report", "pcsr.rec", "--elf", "mixed_forever_m4.elf", "--by", "exception"),
    "refused/uart.txt-by-exception.txt": ("report", "uart.txt", "--elf", "loops_chunks_m4.elf", "--by", "exception"),
    "refused/state.rec-by-other-var.txt": ("report", "state.rec", "--elf", "state_m4.elf", "--by", "var:other"),
    "refused/counts.txt-no-elf.txt": ("report", "counts.txt"),
    "refused/flat.rec-top-json.txt": ("report", "flat.rec", "--elf", "loops_chunks_m4.elf", "--top", "5",
                                      "--format", "json"),
    "refused/flat.rec-pprof-stdout.txt": ("report", "flat.rec", "--elf", "loops_chunks_m4.elf", "--format", "pprof"),
    "refused/diff-census-no-elf.txt": ("diff", "counts.txt", "counts.txt"),   # a census names no ELF
    "refused/truth-by-task.txt": ("truth", "counts.txt", "--elf", "loops_chunks_m4.elf", "--by", "task"),
    "refused/calls.swo-calls-by-line.txt": ("report", "calls.swo", "--elf", "calls_m4.elf", "--calls", "--by", "line"),
}

# The recordings reopened without --elf: their copies in the scratch folder's reopened/, whose
# header names the ELFs by their absolute path in the scratch folder (reopened_copy()).

REOPENED_CASES = {
    "pair.rec": ("text", "json", "collapsed", "speedscope", "callgrind"),
    "stacks.rec": ("text", "json", "collapsed"),
    "dual.rec": ("text", "json"),
}


def _grouping_args(grouping: str) -> tuple[str, tuple[str, ...]]:
    """'function+inline' -> ('function-inline', ('--by', 'function', '--inline'))."""
    by, _, extra = grouping.partition("+")
    args = ("--by", by) + (EXTRA[extra] if extra else ())
    return by.replace(":", "-") + (f"-{extra}" if extra else ""), args


def _format_case(path_stem: str, argv: tuple[str, ...], fmt: str) -> Case:
    path = f"{path_stem}.{EXTENSION[fmt]}"
    return Case(path, argv + ("--format", fmt), binary=fmt in BINARY_FORMATS)


def _profile_cases(command: str, table: dict) -> list[Case]:
    """Every format in every grouping, but gmon.out in the first grouping only: gprof's
    histogram is made from the samples, whatever --by is (src/report/formats.cc)."""
    out = []
    for source, (elves, groupings) in table.items():
        for i, grouping in enumerate(groupings):
            name, args = _grouping_args(grouping)
            for fmt in PROFILE_FORMATS:
                if fmt != "gmon" or i == 0:
                    out.append(_format_case(f"{command}/{source}/{name}", (command, source, *elves, *args), fmt))
    return out


def cases() -> list[Case]:
    out = _profile_cases("report", REPORTS) + _profile_cases("truth", TRUTHS)
    for name, (a, b, options) in DIFFS.items():
        for fmt in DIFF_FORMATS:
            out.append(_format_case(f"diff/{name}/diff", ("diff", a, b, *options), fmt))
    for fmt in CALL_GRAPH_FORMATS:
        out.append(_format_case("calls/calls.swo/calls", ("report", "calls.swo", "--elf", "calls_m4.elf", "--calls"),
                                fmt))
    for path, argv in SINGLES.items():
        out.append(Case(path, argv))
    for source, formats in REOPENED_CASES.items():
        for fmt in formats:
            out.append(_format_case(f"reopened/{source}/function", ("report", f"{REOPENED}/{source}"), fmt))
    paths = [c.path for c in out]
    assert len(paths) == len(set(paths)), "two cases write one expected file"
    return out


# ---------------------------------------------------------------- running

@dataclasses.dataclass
class Result:
    output: bytes | None      # None: a binary case whose command wrote no file
    status: int
    stderr: bytes

    def err_file(self) -> bytes | None:
        """The NAME.err file: only when the command said something on standard error or failed."""
        if self.status == 0 and not self.stderr:
            return None
        return f"exit {self.status}\n".encode() + self.stderr


def reopened_copy(recording: Path, scratch: Path) -> bytes:
    """The recording with its header's `elf_path` (and each of `more_elves`' `elf_path`) made
    the absolute path of that ELF in the scratch folder. `record` stores the ELF as given
    (`elf`) and its absolute path (`elf_path`), and `report` without --elf reopens `elf_path`
    (src/cli/profile_output.cc, settle_recorded_elves): the committed recordings name
    /work/main/tests/golden/inputs/..., the checkout they were made in, which another clone
    does not have. Nothing else changes: the header is length-prefixed JSON with no checksum
    (docs/formats.md, "Recording"), the records after it are copied as they are."""
    data = recording.read_bytes()
    assert data[:8] == b"mcuprof\x1a", recording
    (length,) = struct.unpack_from("<I", data, 12)
    header = json.loads(data[16:16 + length])

    def place(fields: dict) -> None:
        fields["elf_path"] = str(scratch / fields["elf"])

    place(header)
    for image in header.get("more_elves", []):
        place(image)
    text = json.dumps(header, sort_keys=True).encode()
    return data[:12] + struct.pack("<I", len(text)) + text + data[16 + length:]


def prepare(scratch: Path) -> None:
    """The scratch folder: a copy of inputs/, out/ for the binary outputs, reopened/ for the
    recordings reopened without --elf."""
    shutil.copytree(INPUTS, scratch, dirs_exist_ok=True)
    (scratch / "out").mkdir()
    (scratch / REOPENED).mkdir()
    for source in REOPENED_CASES:
        (scratch / REOPENED / source).write_bytes(reopened_copy(scratch / source, scratch))


def normalise(data: bytes, scratch: Path) -> bytes:
    """The one change made to an output before it is compared, and what varies that it removes:
    - the scratch folder's absolute path (a new temporary folder each run, given as it is and
      resolved), written `<scratch>`: only a reopened recording (REOPENED_CASES, text formats
      only) knows its ELFs by that path, and none of their outputs prints it today; this keeps
      one that did from failing on the folder's name. No binary output is normalised.
    Nothing else varies between runs: the recordings carry their own times and figures, the
    report reads no clock, no host name and no environment, and the source files the HTML
    report quotes are the copies under inputs/firmware-ref/src (README.md)."""
    for path in {str(scratch), str(scratch.resolve())}:
        data = data.replace(path.encode(), b"<scratch>")
    return data


def run_case(case: Case, scratch: Path) -> Result:
    argv = [str(CLI), *case.argv]
    out_file = None
    if case.binary:
        out_file = scratch / "out" / case.path.replace("/", "__")
        argv += ["-o", str(out_file.relative_to(scratch))]
    r = subprocess.run(argv, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    if case.binary:
        output = None
        if out_file.exists():
            output = out_file.read_bytes()
            out_file.unlink()
    else:
        output = normalise(r.stdout, scratch)
    return Result(output, r.returncode, normalise(r.stderr, scratch))


def run_all(scratch: Path, workers: int = 2) -> dict[str, Result]:
    """Every case, `workers` at a time (two: the suite's budget is two cores)."""
    prepare(scratch)
    all_cases = list(cases())
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda c: run_case(c, scratch), all_cases))
    return {c.path: r for c, r in zip(all_cases, results)}


# ---------------------------------------------------------------- stored form

ASSET_BLOCK = re.compile(rb"(<script>)(.*?)(</script>)", re.S)
ASSET_MARK = re.compile(rb"@@golden-asset ([0-9a-f]{16})@@")
ASSET_MIN = 16 * 1024


def collapse(data: bytes, assets: dict[str, bytes] | None = None) -> bytes:
    """An HTML page with each large plain <script> block replaced by its asset mark. With
    `assets` given, new blocks are added to it (regenerate.py); without, only blocks already
    stored under expected/_assets are replaced (for a readable diff of a page)."""
    def mark(m: re.Match) -> bytes:
        body = m.group(2)
        if len(body) < ASSET_MIN:
            return m.group(0)
        sha = hashlib.sha256(body).hexdigest()[:16]
        if assets is not None:
            assets[sha] = body
        elif not (ASSETS / f"{sha}.js").is_file():
            return m.group(0)
        return m.group(1) + b"@@golden-asset " + sha.encode() + b"@@" + m.group(3)
    return ASSET_BLOCK.sub(mark, data)


def expand(data: bytes) -> bytes:
    return ASSET_MARK.sub(lambda m: (ASSETS / f"{m.group(1).decode()}.js").read_bytes(), data)


def stored_form(path: str, data: bytes, assets: dict[str, bytes] | None = None) -> bytes:
    return collapse(data, assets) if path.endswith(".html") else data


def expected_files(case: Case) -> tuple[Path, Path]:
    return EXPECTED / case.path, EXPECTED / (case.path + ".err")


# ---------------------------------------------------------------- comparing

def describe_difference(path: str, expected: bytes | None, actual: bytes | None, binary: bool) -> str:
    """What differs, for the first failing output: a unified diff of text (HTML in its stored
    form, the shared scripts as marks), or sizes and the first differing offset of binary."""
    if expected is None or actual is None:
        return f"{path}: expected {'no file' if expected is None else f'{len(expected)} bytes'}, " \
               f"got {'no file' if actual is None else f'{len(actual)} bytes'}"
    if binary:
        at = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
        text = (f"{path}: binary output differs: expected {len(expected)} bytes, got {len(actual)}; "
                f"first difference at offset {at} (expected {expected[at:at + 16].hex()}, got {actual[at:at + 16].hex()})")
        if path.endswith(".gz"):
            try:
                same = gzip.decompress(expected) == gzip.decompress(actual)
                text += ("; the decompressed protobufs are equal (zlib compressed them differently)" if same
                         else "; the decompressed protobufs differ too")
            except (OSError, EOFError, zlib.error) as e:
                text += f"; one of them does not decompress: {e}"
        return text
    a = stored_form(path, expected).decode(errors="replace").splitlines(keepends=True)
    b = stored_form(path, actual).decode(errors="replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"expected/{path}", f"actual/{path}", n=3))
    shown = "".join(line if len(line) <= 400 else line[:400] + f"... ({len(line)} characters)\n"
                    for line in lines[:80])
    if len(lines) > 80:
        shown += f"... {len(lines) - 80} more diff lines\n"
    at = next((i for i, (x, y) in enumerate(zip(expected, actual)) if x != y), min(len(expected), len(actual)))
    shown += f"(first difference at byte {at} of {len(expected)} expected, {len(actual)} got: " \
             f"{expected[max(0, at - 60):at + 60]!r} -> {actual[max(0, at - 60):at + 60]!r})\n"
    return shown


def compare(case: Case, result: Result) -> str | None:
    """None when the case's output and its .err are those stored, else what differs."""
    out_path, err_path = expected_files(case)
    expected_out = expand(out_path.read_bytes()) if out_path.is_file() else None
    if expected_out != result.output:
        if expected_out is None and not out_path.is_file() and result.output is not None:
            return f"{case.path}: no expected output stored (a new case? run tests/golden/regenerate.py)"
        return describe_difference(case.path, expected_out, result.output, case.binary)
    expected_err = err_path.read_bytes() if err_path.is_file() else None
    if expected_err != result.err_file():
        return describe_difference(case.path + ".err", expected_err, result.err_file(), False)
    return None
