"""Shared helpers for the integration and live tests: run reference firmware in QEMU with the truth
plugin, read its dump and counts independently of mcuprof, ask the mcuprof CLI, and compare
with standard errors.

Environment (set by each test's CMakeLists.txt under ctest; defaults fit `make build`):
  MCUPROF_CLI           the mcuprof executable            (default build/mcuprof)
  MCUPROF_FW_DIR        the reference ELFs                 (default build/firmware-ref)
  MCUPROF_TRUTH_PLUGIN  libtruth.so                        (default build/firmware-ref/libtruth.so)
  MCUPROF_UNDER_CTEST   set: a missing CLI or image fails a test instead of skipping it
"""
from __future__ import annotations

import atexit
import bisect
import collections
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from functools import lru_cache
from pathlib import Path

import qemu_runner
from elf_symbols import nm_symbols

REPO = Path(__file__).resolve().parents[2]

FW_DIR = Path(os.environ.get("MCUPROF_FW_DIR", REPO / "build" / "firmware-ref"))
CLI = Path(os.environ.get("MCUPROF_CLI", REPO / "build" / "mcuprof"))
PLUGIN = Path(os.environ.get("MCUPROF_TRUTH_PLUGIN", FW_DIR / "libtruth.so"))
STRICT = bool(os.environ.get("MCUPROF_UNDER_CTEST"))

# The seed's published truth for scenario 1 (instructions per loop pass: 3504, 1004, 504, 10).
SEED_SCENARIO1_TRUTH = {"hot_a": 69.77, "hot_b": 19.99, "hot_c": 10.04, "run": 0.20}
SEED_PASS_INSTRUCTIONS = {"hot_a": 3504, "hot_b": 1004, "hot_c": 504, "run": 10}

_workdir = Path(tempfile.mkdtemp(prefix="mcuprof-it-"))
atexit.register(shutil.rmtree, _workdir, True)


def work_dir(prefix: str) -> Path:
    """A fresh folder for a test's files, named `prefix`..., removed with the rest of this
    process's at its exit (tests that end with their QEMU need not remove it themselves)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_workdir))


def _missing(what: str) -> None:
    if STRICT:
        raise AssertionError(what)
    raise unittest.SkipTest(what)


def elf_path(name: str) -> Path:
    p = FW_DIR / f"{name}.elf"
    if not p.is_file():
        _missing(f"{p} is missing: build the firmware (make firmware)")
    return p


def manifest(name: str) -> dict:
    entry = qemu_runner.manifest_entry(elf_path(name))
    assert entry is not None, f"{name} not in {FW_DIR}/manifest.json"
    return entry


def manifest_define(name: str, key: str, default=None):
    for d in manifest(name)["defs"]:
        k, _, v = d.partition("=")
        if k == key:
            return int(v, 0) if v else 1
    return default


# ---------------------------------------------------------------- running


class Run:
    """One finished run: UART text saved as dump.txt, truth counts as truth.txt."""

    def __init__(self, name: str, dump: Path, truth: Path, seconds: float):
        self.name = name
        self.elf = elf_path(name)
        self.dump_path = dump
        self.truth_path = truth
        self.seconds = seconds
        self.text = dump.read_text(encoding="ascii", errors="replace")
        self.dump = parse_dump(self.text)
        self.counts = read_counts(truth)


@lru_cache(maxsize=None)
def run(name: str, timeout: float = 900.0, icount_sleep: bool = True) -> Run:
    """Run an image to its semihosting exit with the truth plugin (once per process).
    `timeout` is a bound for a hang, not an expectation: the longest image (loops_tim3_m4,
    8.5e8 instructions) takes 14 s here with both cores busy, and took over 120 s once while
    the machine ran two test suites and four builds. icount_sleep=False: -icount sleep=off, for
    an image that sleeps (qemu_runner.QemuRun)."""
    elf = elf_path(name)
    if not PLUGIN.is_file():
        _missing(f"{PLUGIN} is missing: build the host project (it builds firmware-ref/truth)")
    d = _workdir / name
    d.mkdir(parents=True, exist_ok=True)
    dump, truth = d / "dump.txt", d / "truth.txt"
    res = qemu_runner.run_to_exit(elf, uart_path=dump, truth_path=truth, timeout=timeout,
                                  plugin=PLUGIN, icount_sleep=icount_sleep)
    return Run(name, dump, truth, res.seconds)


# ---------------------------------------------------------------- reading, independently of mcuprof


class Dump:
    def __init__(self):
        self.kind = None          # "raw" or "hist"
        self.n = 0                # the header's n=
        self.pcs: list[int] = []
        self.tags: list[int] = []
        self.base = 0
        self.shift = 0
        self.out = 0
        self.bins: list[int] = []
        self.tasks: dict[int, str] = {}
        self.spans: list[int] = []
        self.fields: dict[str, int] = {}  # key=value pairs of a "cost" line
        self.ended = False


def parse_dump(text: str) -> Dump:
    d = Dump()
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if line.startswith("prof raw "):
            d.kind, d.n = "raw", int(re.search(r"n=(\d+)", line).group(1))
        elif line.startswith("prof hist "):
            m = re.match(r"prof hist base=0x([0-9a-f]+) shift=(\d+) n=(\d+) out=(\d+)", line)
            d.kind, d.base, d.shift, d.n, d.out = "hist", int(m.group(1), 16), int(m.group(2)), \
                int(m.group(3)), int(m.group(4))
        elif f[0] == "p":
            d.pcs += [int(x, 16) for x in f[1:]]
        elif f[0] == "g":
            d.tags += [int(x, 16) for x in f[1:]]
        elif f[0] == "h":
            d.bins += [int(x, 16) for x in f[1:]]
        elif f[0] == "task":
            d.tasks[int(f[1], 16)] = f[2]
        elif line.startswith("span="):
            d.spans.append(int(line[5:]))
        elif f[0] == "cost":
            d.fields = {k: int(v) for k, v in (x.split("=") for x in f[1:])}
        elif f[0] == "end":
            d.ended = True
    return d


def read_counts(path: Path) -> dict[int, int]:
    counts = {}
    for line in path.read_text().splitlines():
        if line.startswith("#"):   # mcuprof's note on a run cut at its budget
            continue
        a, n = line.split()
        counts[int(a, 16)] = int(n)
    return counts


class Symbols:
    """Function ranges from the ELF symbol table (arm-none-eabi-nm), for checks that must not
    depend on the tool under test."""

    def __init__(self, elf: Path):
        self.funcs: list[tuple[int, int, str]] = sorted(
            (s.start, s.size, s.name) for s in nm_symbols(elf, "TtWw") if s.size > 0)
        self._starts = [s for s, _, _ in self.funcs]
        self.by_name = {n: (s, z) for s, z, n in self.funcs}

    def lookup(self, addr: int) -> str:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0:
            s, z, n = self.funcs[i]
            if addr < s + z:
                return n
        return "?"

    def range(self, name: str) -> tuple[int, int]:
        s, z = self.by_name[name]
        return s, s + z


@lru_cache(maxsize=None)
def symbols(name: str) -> Symbols:
    return Symbols(elf_path(name))


def by_function(counts: dict[int, int] | list[int], syms: Symbols) -> collections.Counter:
    c = collections.Counter()
    if isinstance(counts, dict):
        for a, n in counts.items():
            c[syms.lookup(a)] += n
    else:
        for a in counts:
            c[syms.lookup(a)] += 1
    return c


def shares(counter: collections.Counter, names) -> dict[str, float]:
    """Percent of each of `names` within their own total (renormalized to that set)."""
    total = sum(counter[n] for n in names)
    assert total > 0, f"none of {sorted(names)} executed"
    return {n: 100.0 * counter[n] / total for n in names}


def std_error_pp(p_percent: float, n: int) -> float:
    """Standard error in percentage points of a share p (percent) estimated from n samples."""
    p = p_percent / 100.0
    return 100.0 * math.sqrt(p * (1.0 - p) / n)


def fractions(counts: dict[str, float], total: float | None = None) -> dict[str, float]:
    """Each count over `total` (default: their sum), for beyond_se."""
    total = sum(counts.values()) if total is None else total
    return {name: n / total for name, n in counts.items()}


def beyond_se(observed: dict[str, float], truth: dict[str, float], n: int, *, min_share: float,
              z: float = 4.0, ratios: dict[str, float] | None = None, default_ratio: float = 1.0,
              stall_free: dict[str, float] | None = None) -> list[tuple]:
    """The names of `truth` whose true share is at least `min_share` and whose observed share (0
    when `observed` lacks the name) is more than `z` standard errors from it, as
    [(name, observed %, truth %, z-score)]; [] when all hold. Shares are fractions (fractions()).

    The standard error is the binomial one of a sample of `n` at the true share p, as a score
    test has it (a small row's binomial error at its observed share would be too small), times
    the row's ratio: ratios[name], else default_ratio; 1 for independent samples, a report's
    own error over its binomial one for correlated reads (burst_ratios).

    `stall_free`: the shares of the same time census without its stalls (stall_free_census()).
    A sampler that waits for its own halts finds a stall of QEMU's vCPU thread at most once, so
    its expected share lies between the two censuses' (docs/firmware-ref.md, "Stalls"): each
    name is then held to the nearer end of that interval, p, a name inside it passing."""
    bad = []
    for name, p in truth.items():
        if stall_free is not None:
            low, high = sorted((p, stall_free.get(name, 0.0)))
        else:
            low = high = p
        if high < min_share:
            continue
        q = observed.get(name, 0.0)
        p = min(max(q, low), high)
        se = (ratios or {}).get(name, default_ratio) * math.sqrt(p * (1 - p) / n)
        if abs(q - p) > z * se:
            bad.append((name, round(100 * q, 2), round(100 * p, 2), round((q - p) / se, 2) if se > 0 else math.inf))
    return bad


def apart_by_se(a: dict[str, int], b: dict[str, int], n: int, *, min_share: float, z: float = 4.0) -> list[tuple]:
    """Names whose shares in two independent profiles of `n` samples each (counts by name)
    differ by more than `z` combined standard errors at their pooled share, as
    [(name, a %, b %, z-score)] for names whose pooled share is at least `min_share`; [] when
    all agree."""
    bad = []
    for name in set(a) | set(b):
        pa, pb = a.get(name, 0) / n, b.get(name, 0) / n
        pooled = (pa + pb) / 2
        if pooled < min_share:
            continue
        score = (pa - pb) / math.sqrt(2 * pooled * (1 - pooled) / n) if 0 < pooled < 1 else 0.0
        if abs(score) > z:
            bad.append((name, round(100 * pa, 2), round(100 * pb, 2), round(score, 2)))
    return bad


def stall_free_census(census: dict[str, int], stalls: dict[str, int]) -> dict[str, int]:
    """A time census by name less its stalls (qemu_runner.snapshot_stalls(), by the same names):
    the reference of a sampler that found none of them; beyond_se's `stall_free`, as fractions()."""
    return {name: ns - stalls.get(name, 0) for name, ns in census.items()}


def burst_ratios(report: dict) -> tuple[dict[str, float], float]:
    """A JSON report's standard error of each function over the binomial one at its share (its
    errors from the spread between bursts of correlated reads, docs/live.md), and its largest
    ratio, for the rows it lacks or whose binomial error is 0: beyond_se's ratios and
    default_ratio."""
    n, largest = report["samples"], report["errors"]["largest_ratio"]
    ratios = {}
    for row in report["functions"]:
        q = row["percent"] / 100
        binomial = math.sqrt(q * (1 - q) / n)
        ratios[row["name"]] = row["stderr"] / 100 / binomial if binomial > 0 else largest
    return ratios, largest


def repeat_period(seq: list[int]):
    """Smallest p with seq[k] == seq[k+p] for all k, or None."""
    for p in range(1, len(seq) // 2 + 1):
        if seq[p:] == seq[:-p]:
            return p
    return None


@lru_cache(maxsize=None)
def disassembly(name: str) -> dict[str, list[tuple[int, str]]]:
    """Function name -> [(address, instruction text)] from arm-none-eabi-objdump."""
    out = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", str(elf_path(name))],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def calls(counts: dict[int, int], syms: Symbols, name: str) -> int:
    """How many times a function was entered: executions of its first instruction (for the
    nop-loop functions the entry is not a loop target)."""
    return counts.get(syms.range(name)[0], 0)


# ---------------------------------------------------------------- the mcuprof CLI


def cli_json(*args: str) -> dict:
    if not CLI.is_file():
        _missing(f"{CLI} is missing: build the host project")
    proc = subprocess.run([str(CLI), *args, "--format", "json"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)


def rows(report: dict) -> dict[str, dict]:
    """The report's rows by name (functions, or tasks with --by task)."""
    for key in ("functions", "rows", "tasks"):
        if key in report:
            return {r["name"]: r for r in report[key]}
    raise AssertionError(f"no rows in report: keys {sorted(report)}")


def percent(report: dict, name: str) -> float:
    r = rows(report).get(name)
    return float(r["percent"]) if r else 0.0


def warning_kinds(report: dict) -> set[str]:
    return {w.get("kind") for w in report.get("warnings", [])}


class IntegrationCase(unittest.TestCase):
    """Assertions shared by the scenario tests."""

    def assertWithinSE(self, measured: float, truth: float, n: int, k: float = 4.0, what: str = ""):
        se = std_error_pp(truth, n)
        self.assertLessEqual(abs(measured - truth), k * se,
                             f"{what}: measured {measured:.3f} %, truth {truth:.3f} %, "
                             f"|diff| {abs(measured - truth):.3f} > {k} x SE {se:.3f} pp (N={n})")

    def assertProfileMatchesTruth(self, report: dict, truth_shares: dict[str, float], n: int,
                                  what: str = ""):
        """Every function of the window within 4 SE of the truth, no sample anywhere else."""
        got = rows(report)
        for name, t in truth_shares.items():
            self.assertWithinSE(percent(report, name), t, n, what=f"{what} {name}")
        stray = {k: v["samples"] for k, v in got.items() if k not in truth_shares and v["samples"]}
        self.assertFalse(stray, f"{what}: samples outside the measured functions: {stray}")

    def assertSeesLikelyAddresses(self, r: "Run", syms: Symbols, window):
        """Every address of the window that the truth expects to get >= 10 samples was sampled
        (an unbiased sampler misses one with probability < e^-10)."""
        counts = {a: n for a, n in r.counts.items() if syms.lookup(a) in window}
        total = sum(counts.values())
        likely = {a for a, n in counts.items() if n / total * len(r.dump.pcs) >= 10}
        self.assertTrue(likely)
        missed = likely - set(r.dump.pcs)
        self.assertFalse(missed, f"never sampled: {[hex(a) for a in sorted(missed)]}")
