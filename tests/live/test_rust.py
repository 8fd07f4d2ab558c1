"""The Rust reference firmware (firmware-ref/src/rust, issue 42): fw.rs built by Debian's rustc,
legacy and v0 mangling at opt-level 2 and s, recorded with `record --qemu --stacks` and over
QEMU's gdbstub, against oracles that are not mcuprof:

- shares: every function row, by its start address, within 4 standard errors, sqrt(p(1-p)/N),
  of the truth plugin's census of the same run grouped by arm-none-eabi-nm's symbols, under
  `record --qemu` and replayed over the gdbstub (`record --gdb --pace icount`);
- stacks: at least 99 % of the Thread-mode chains complete: untruncated, from Reset_Handler
  through main (the image has no interrupt: every sample is in Thread mode);
- names: every row's and every frame's name is rustc-demangle's alternate form of its symbol
  (tests/peers/rust_demangle.rs, the crate Rust's tools use), with " (ADDRESS)" where two
  functions print alike (the two legacy instances of checksum<T>); under v0 they differ by their
  generic arguments;
- lines and inline chains: at every sampled address the chain of the stack's innermost frames,
  function and file:line frame by frame, is llvm-symbolizer-19's --inlines answer (its linkage
  names read by the peer demangler);
- formats: collapsed stacks, speedscope, the Firefox profile and pprof (go tool pprof) carry
  the same Rust names as the JSON report.
Run by hand, an image the build left out is skipped with the reason the build wrote
(NAME.unbuilt), and when none was built the module ends with the skip code, 77; under ctest
live.rust_built fails first, naming them, and this module does not run."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import fwtest
import live_runs
from elf_symbols import census_by_function, nm_symbols, symbolizer_chain

Z = 4.0
SAMPLES = 2000
IMAGES = ("rust_o2_m4", "rust_os_m4", "rust_v0_o2_m4", "rust_v0_os_m4")
PEER = Path(os.environ.get("MCUPROF_RUST_DEMANGLE", fwtest.REPO / "build" / "tests" / "peers" / "rust-demangle"))


def unbuilt_reason(image: str) -> str | None:
    marker = fwtest.FW_DIR / f"{image}.unbuilt"
    return marker.read_text().strip() if marker.is_file() else None


def built_images() -> list[str]:
    return [image for image in IMAGES if unbuilt_reason(image) is None]


def mcuprof(*args: str) -> str:
    proc = subprocess.run([str(fwtest.CLI), *args], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"mcuprof {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def peer_names(names: list[str]) -> list[str]:
    """rustc-demangle's "{:#}" of each name; names that are not Rust's come back as they are."""
    if not PEER.is_file():
        fwtest._missing(f"{PEER} is missing: build the host project with rustc and librust-rustc-demangle-dev")
    out = subprocess.run([str(PEER)], input="".join(n + "\n" for n in names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(names)
    return out


def shares_off(doc: dict, census: dict[int, int], elf: Path) -> tuple[list[str], int]:
    """The rows beyond Z standard errors of the census grouped by nm's functions, and how many
    rows were checked (every row of at least 0.5 % true share)."""
    truth = census_by_function(census, elf)
    total = sum(truth.values())
    n = doc["samples"]
    observed = {row["address"]: row["samples"] for row in doc["functions"] if "address" in row}
    off, checked = [], 0
    for start, count in truth.items():
        p = count / total
        if start is None or p < 0.005:
            continue
        checked += 1
        q = observed.get(start, 0) / n
        se = math.sqrt(p * (1 - p) / n)
        if abs(q - p) > Z * se:
            off.append(f"{hex(start)} sampled {100 * q:.2f} % truth {100 * p:.2f} % z {(q - p) / se:.2f}")
    # A row with samples where the census has none is off too.
    for address, count in observed.items():
        if count and truth.get(address, 0) == 0:
            off.append(f"{hex(address)} sampled {count} times, never run")
    return off, checked


def thread_chains(doc: dict) -> tuple[float, float]:
    """(complete samples, samples) of the Thread-mode stacks: untruncated, rooted at Reset_Handler,
    through main unless in the start-up code before it."""
    complete = total = 0.0
    for stack in doc["stacks"]:
        names = [f["function"] for f in stack["frames"]]
        total += stack["samples"]
        if not stack["truncated"] and names[:1] == ["Reset_Handler"] and (len(names) == 1 or names[1] == "main"):
            complete += stack["samples"]
    return complete, total


class Run:
    def __init__(self, image: str, work: Path):
        self.image = image
        self.elf = fwtest.elf_path(image)
        self.rec, census = work / f"{image}.bin", work / f"{image}.census"
        self.doc = json.loads(mcuprof("record", "--qemu", "netduinoplus2", "--elf", str(self.elf), "--samples",
                                      str(SAMPLES), "--seed", "11", "--stacks", "-o", str(self.rec), "--census",
                                      str(census), "--format", "json"))
        self.census = fwtest.read_counts(census)

    def report(self, *args: str) -> dict:
        return json.loads(mcuprof("report", str(self.rec), "--elf", str(self.elf), "--format", "json", *args))

    def written(self, fmt: str, work: Path) -> Path:
        out = work / f"{self.image}.{fmt}"
        mcuprof("report", str(self.rec), "--elf", str(self.elf), "--format", fmt, "-o", str(out))
        return out


class RustFirmware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-rust-"))
        cls.runs = {image: Run(image, cls.work) for image in built_images()}
        for image in IMAGES:
            if image not in cls.runs:
                print(f"\n{image} skipped: {unbuilt_reason(image)}", file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_shares_under_record_qemu_within_4_se_of_the_truth(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                n = run.doc["samples"]
                self.assertGreater(n, SAMPLES * 0.8)
                off, checked = shares_off(run.doc, run.census, run.elf)
                self.assertEqual(off, [], f"{image}: {checked} rows checked, {n} samples")
                self.assertGreaterEqual(checked, 6)

    def test_shares_over_the_gdbstub_within_4_se_of_the_truth(self):
        for image in self.runs:
            with self.subTest(image=image):
                doc, counts = live_runs.replayed_recording(self, image, SAMPLES, "13", "--stacks")
                off, checked = shares_off(doc, counts, fwtest.elf_path(image))
                self.assertEqual(off, [], f"{image}: {checked} rows checked, {doc['samples']} samples")
                self.assertGreaterEqual(checked, 6)
                complete, total = thread_chains(doc)
                self.assertGreaterEqual(complete / total, 0.99, f"{image}: {complete} of {total}")

    def test_thread_mode_chains_complete(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                complete, total = thread_chains(run.doc)
                print(f"\n{image}: thread-mode chains complete {complete:.0f} of {total:.0f}; "
                      f"truncation {run.doc.get('truncation')}", file=sys.stderr)
                self.assertEqual(total, run.doc["samples"])
                self.assertGreaterEqual(complete / total, 0.99)

    def test_names_are_rustc_demangle_names(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                rows = [r for r in run.doc["functions"] if "symbol" in r]
                self.assertGreater(len(rows), 6)
                names = [r["name"] for r in rows]
                self.assertEqual(len(set(names)), len(names))
                for row, shown in zip(rows, peer_names([r["symbol"] for r in rows])):
                    self.assertTrue(row["name"] == shown or row["name"].startswith(shown + " ("), (row, shown))
                    self.assertFalse(row["name"].startswith(("_ZN", "_R")), row)
                frames = {f["function"] for stack in run.doc["stacks"] for f in stack["frames"]}
                self.assertTrue({r["name"] for r in rows if r["samples"] > 0} <= frames)
                # The two instances of checksum<T>: alike under legacy, told apart by address;
                # under v0 by their generic arguments, as the peer reads them.
                symbols = [s for s in nm_symbols(run.elf, "Tt") if s.size > 0]
                shown = dict(zip((s.start for s in symbols), peer_names([s.name for s in symbols])))
                checksums = [s.start for s in symbols if shown[s.start].startswith("fw::checksum")]
                self.assertEqual(len(checksums), 2, image)
                labels = {a: r["name"] for r in run.doc["functions"] if "address" in r for a in [r["address"]]}
                sampled = [labels[a] for a in checksums if a in labels]
                self.assertEqual(len(sampled), 2, (image, sampled))
                if "_v0_" in image:
                    self.assertEqual(sorted(sampled), sorted(shown[a] for a in checksums))
                    self.assertEqual(len({shown[a] for a in checksums}), 2)
                else:
                    self.assertEqual({shown[a] for a in checksums}, {"fw::checksum"})
                    self.assertEqual(sorted(sampled), sorted(f"fw::checksum (0x{a:08x})" for a in checksums))

    def test_lines_and_inline_chains_are_llvm_symbolizers(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                checked = inlined = 0
                for stack in run.doc["stacks"]:
                    frames = stack["frames"]
                    leaf = frames[-1]["address"]
                    ours = []   # innermost first: the frames at the sampled address
                    for f in reversed(frames):
                        if f["address"] != leaf:
                            break
                        ours.append(f)
                    theirs = symbolizer_chain(run.elf, leaf, demangle=False)
                    self.assertEqual(len(ours), len(theirs), (hex(leaf), ours, theirs))
                    names = peer_names([name for name, _ in theirs])
                    for i, (mine, name, (_, place)) in enumerate(zip(ours, names, theirs)):
                        what = (hex(leaf), i, mine, name, place)
                        # The outermost frame is the function's row, with its namesake label
                        # (" (ADDRESS)"); an inlined one is labelled " (DIE OFFSET)" where two
                        # inlined functions print alike, which under v0 none do: every name
                        # carries its generic arguments, and one function's several DIEs (rustc
                        # writes core's wrapping_mul more than once into one unit) are one name.
                        if "_v0_" in image and i + 1 < len(ours):
                            self.assertEqual(mine["function"], name, what)
                        else:
                            self.assertTrue(mine["function"] == name or mine["function"].startswith(name + " ("),
                                            what)
                        self.assertEqual(os.path.normpath(mine.get("location", "")) if mine.get("location") else "",
                                         os.path.normpath(place) if place else "", what)
                    checked += 1
                    inlined += len(ours) > 1
                # Every sampled address (report --by address): its line is the symbolizer's
                # innermost, the functions it is inlined into are the symbolizer's outer frames,
                # innermost first.
                rows = [r for r in run.report("--by", "address")["functions"] if "address" in r]
                for row in rows:
                    theirs = symbolizer_chain(run.elf, row["address"], demangle=False)
                    names = peer_names([name for name, _ in theirs])
                    what = (hex(row["address"]), row, theirs)
                    place = theirs[0][1]
                    self.assertEqual(os.path.normpath(row["location"]) if "location" in row else "",
                                     os.path.normpath(place) if place else "", what)
                    outer = row.get("inlined_into", [])
                    self.assertEqual(len(outer), len(theirs) - 1, what)
                    for mine, name in zip(outer, names[1:]):
                        self.assertTrue(mine == name or mine.startswith(name + " ("), what)
                    self.assertTrue(row["function"].startswith(names[-1]), what)
                print(f"\n{image}: {checked} stacks' leaf chains and {len(rows)} sampled addresses checked, "
                      f"{inlined} leaves with inlined frames", file=sys.stderr)
                self.assertGreater(checked, 20)
                self.assertGreater(inlined, 0)
                self.assertGreater(len(rows), 100)

    def test_formats_carry_the_rust_names(self):
        for image, run in self.runs.items():
            with self.subTest(image=image):
                frames = {f["function"] for stack in run.doc["stacks"] for f in stack["frames"]}
                self.assertTrue(any(f.startswith("<fw::dsp::") for f in frames), frames)
                # Collapsed separates frames with ';': the one in an array type, "[T; N]", is
                # written ':' there (docs/formats.md), and nowhere else.
                collapsed = run.written("collapsed", self.work).read_text().splitlines()
                self.assertEqual({f for line in collapsed for f in line.rsplit(" ", 1)[0].split(";")},
                                 {f.replace(";", ":") for f in frames})
                speedscope = json.loads(run.written("speedscope", self.work).read_text())
                self.assertEqual({f["name"] for f in speedscope["shared"]["frames"]}, frames)
                shared = json.loads(run.written("firefox", self.work).read_text())["shared"]
                self.assertEqual({shared["stringArray"][i] for i in shared["funcTable"]["name"]}, frames)
                pprof = go_pprof_names(run.written("pprof", self.work))
                self.assertEqual(pprof, frames)


def go_pprof_names(profile: Path) -> set[str]:
    """The function names `go tool pprof -raw` reads from a profile (its Locations' lines)."""
    go = shutil.which("go")
    if go is None:
        fwtest._missing("go is not installed (Debian package golang-go)")
    env = dict(os.environ, HOME=tempfile.gettempdir(), PPROF_TMPDIR=tempfile.gettempdir())
    out = subprocess.run([go, "tool", "pprof", "-raw", str(profile)], capture_output=True, text=True, timeout=300,
                         env=env, check=True).stdout
    names, in_locations = set(), False
    for line in out.splitlines():
        if line.startswith("Locations"):
            in_locations = True
        elif line.startswith("Mappings"):
            break
        elif in_locations and line.strip():
            # "     1: 0x8000bfe M=1 name file:line s=0" or a continuation line for an inlined frame.
            fields = line.split()
            at = next((i for i, f in enumerate(fields) if f.startswith("M=")), None)
            body = fields[at + 1:] if at is not None else fields
            rest = " ".join(body)
            names.add(rest.rsplit(" s=", 1)[0].rsplit(" ", 1)[0])
    return names


if __name__ == "__main__":
    if not built_images():
        print("every Rust image was left out by the build: " +
              "; ".join(f"{i}: {unbuilt_reason(i)}" for i in IMAGES), file=sys.stderr)
        sys.exit(77)
    unittest.main()
