"""The recording knows its firmware, and callgrind_annotate reads a recursive call tree.

One recording with stacks of calltree_forever_m4 in QEMU (wall pacing, ended by its sample
count), then:
- its header holds the ELF's absolute path and identity: a SHA-256 of the allocated
  sections, computed here from the ELF's section headers; or, for an image linked with
  --build-id, the note that arm-none-eabi-readelf -n shows;
- `report FILE` without --elf uses the recorded ELF and gives what --elf gives;
- another firmware-ref image (mixed_forever_m4: a real mismatch) gives the elf-mismatch
  warning naming both in text, JSON and HTML, and with --strict one line and exit 2;
- the same image rebuilt from the same sources in another build tree (its DWARF differs,
  its loaded bytes do not) matches: no warning;
- a recording from before the identity (header without elf_path and elf_identity) reads as
  before: --elf required, nothing compared;
- callgrind_annotate --inclusive=yes gives every function our inclusive samples, except the
  one difference docs/formats.md states: a function that calls itself also counts, once
  more, the samples whose stack holds that self-call;
- two images on one target (vendor_boot_m4 and vendor_app_m4, two --elf): top's recording
  names both and is reported from them, and truth --qemu counts both images' functions as
  the census, summed here by arm-none-eabi-nm's symbols of each, says.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
import fwtest
import qemu_runner
import run_header
from elf_symbols import nm_symbols

SAMPLES = 1500


def mcuprof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(fwtest.CLI), *map(str, args)], capture_output=True, text=True, timeout=300)


def record(elf: Path, out: Path, *extra: str) -> None:
    with qemu_runner.QemuRun(elf, gdb=True, halted=True, uart=None, timeout=600) as q:
        r = mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--elf", elf, "-o", out, *extra)
    assert r.returncode == 0, r.stderr


def header_of(path: Path) -> dict:
    return run_header.read_header(path)


def with_header(path: Path, header: dict, out: Path) -> None:
    """The same recording with another header (docs/formats.md: magic, version, length, JSON)."""
    data = path.read_bytes()
    length = struct.unpack_from("<I", data, 12)[0]
    text = json.dumps(header).encode()
    out.write_bytes(data[:12] + struct.pack("<I", len(text)) + text + data[16 + length:])


def loaded_sections_sha256(elf: Path) -> str:
    """SHA-256 over every SHF_ALLOC section with contents, in section-header order: its
    address and size as u32 little-endian, then its bytes (ELF32 little-endian)."""
    data = elf.read_bytes()
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    digest = hashlib.sha256()
    for i in range(shnum):
        _, kind, flags, addr, offset, size = struct.unpack_from("<IIIIII", data, shoff + i * shentsize)
        if flags & 0x2 and kind != 8:   # SHF_ALLOC, not SHT_NOBITS
            digest.update(struct.pack("<II", addr, size) + data[offset:offset + size])
    return digest.hexdigest()


def rebuild(name: str, where: Path, *cmake_args: str) -> Path:
    """The firmware image built anew from the same sources in another build tree."""
    out = where / "out"
    subprocess.run(["cmake", "-S", REPO / "firmware-ref", "-B", where / "build",
                    f"-DCMAKE_TOOLCHAIN_FILE={REPO / 'firmware-ref' / 'cmake' / 'arm-none-eabi.cmake'}",
                    f"-DFIRMWARE_OUTPUT_DIR={out}", *cmake_args], check=True, capture_output=True, timeout=600)
    subprocess.run(["cmake", "--build", where / "build", "--target", name], check=True, capture_output=True,
                    timeout=900)
    return out / f"{name}.elf"


class RecordedFirmware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.elf = fwtest.elf_path("calltree_forever_m4")
        cls.other = fwtest.elf_path("mixed_forever_m4")
        cls.dir = Path(tempfile.mkdtemp(prefix="mcuprof-firmware-"))
        cls.rec = cls.dir / "rec.bin"
        record(cls.elf, cls.rec, "--stacks", "--samples", str(SAMPLES))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def report(self, *args):
        return mcuprof("report", self.rec, *args)

    def test_header_names_the_elf(self):
        header = header_of(self.rec)
        self.assertEqual(header["elf_path"], str(self.elf.resolve()))
        self.assertEqual(header["elf_identity"], {"kind": "sha256", "value": loaded_sections_sha256(self.elf)})

    def test_report_without_elf_uses_the_recorded_one(self):
        implicit = self.report("--format", "json")
        self.assertEqual(implicit.returncode, 0, implicit.stderr)
        explicit = self.report("--elf", self.elf, "--format", "json")
        self.assertEqual(json.loads(implicit.stdout), json.loads(explicit.stdout))
        self.assertNotIn("elf-mismatch", implicit.stdout)

    def test_another_firmware_is_named_with_both(self):
        both = (str(self.elf.resolve()), str(self.other))
        doc = json.loads(self.report("--elf", self.other, "--format", "json").stdout)
        mismatch = [w["message"] for w in doc["warnings"] if w["kind"] == "elf-mismatch"]
        self.assertEqual(len(mismatch), 1, doc["warnings"])
        for path in both:
            self.assertIn(path, mismatch[0])
        text = self.report("--elf", self.other)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn(mismatch[0], text.stdout)
        page = self.dir / "mismatch.html"
        html = self.report("--elf", self.other, "--format", "html", "-o", page)
        self.assertEqual(html.returncode, 0, html.stderr)
        self.assertIn(str(self.other), page.read_text())
        self.assertIn(str(self.other), html.stderr)   # a file report: the warning on standard error too
        strict = self.report("--elf", self.other, "--strict")
        self.assertEqual(strict.returncode, 2, strict.stderr)
        self.assertEqual(len(strict.stderr.strip().splitlines()), 1, strict.stderr)
        for path in both:
            self.assertIn(path, strict.stderr)
        self.assertEqual(strict.stdout, "")

    def test_an_identical_rebuild_matches(self):
        rebuilt = rebuild("calltree_forever_m4", self.dir / "rebuild")
        self.assertNotEqual(rebuilt.read_bytes(), self.elf.read_bytes())   # its DWARF names its build tree
        r = self.report("--elf", rebuilt, "--format", "json", "--strict")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([w for w in json.loads(r.stdout)["warnings"] if w["kind"] == "elf-mismatch"], [])

    def test_build_id_from_the_note(self):
        # The note at the end of the flash: where ld puts it by default (first) the vector
        # table would not be at the start of the flash, and the image would not boot.
        linked = rebuild("calltree_forever_m4", self.dir / "build-id",
                         "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--build-id -Wl,--section-start=.note.gnu.build-id=0x080f0000")
        notes = subprocess.run(["arm-none-eabi-readelf", "-n", linked], capture_output=True, text=True,
                               check=True).stdout
        build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
        rec = self.dir / "build-id.bin"
        record(linked, rec, "--samples", "50")
        self.assertEqual(header_of(rec)["elf_identity"], {"kind": "build-id", "value": build_id})
        # The original image has no note: another identity, so another firmware for the check.
        r = mcuprof("report", rec, "--elf", self.elf, "--strict")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(build_id, r.stderr)

    def test_recordings_without_identity_read_as_before(self):
        header = header_of(self.rec)
        for key in ("elf_path", "elf_identity"):
            del header[key]
        old = self.dir / "old.bin"
        with_header(self.rec, header, old)
        r = mcuprof("report", old)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--elf", r.stderr)
        r = mcuprof("report", old, "--elf", self.other, "--format", "json", "--strict")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("elf-mismatch", r.stdout)

    def test_callgrind_annotate_on_recursion(self):
        if not shutil.which("callgrind_annotate"):
            fwtest._missing("callgrind_annotate is not installed (Debian package valgrind)")
        out = self.dir / "tree.callgrind"
        self.assertEqual(self.report("--format", "callgrind", "-o", out).returncode, 0)
        annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                                   capture_output=True, text=True, timeout=120)
        self.assertEqual(annotated.returncode, 0, annotated.stderr)
        theirs = {m.group(2): int(m.group(1).replace(",", ""))
                  for m in re.finditer(r"^\s*([\d,]+) \([ \d.]+%\)\s+\S.*:([^:\s]+)\s*$", annotated.stdout, re.M)}
        doc = json.loads(self.report("--format", "json").stdout)
        self_calls: dict[str, int] = {}   # samples whose stack holds f calling f
        for stack in doc["stacks"]:
            names = [f["function"] for f in stack["frames"]]
            for name in {a for a, b in zip(names, names[1:]) if a == b}:
                self_calls[name] = self_calls.get(name, 0) + stack["samples"]
        self.assertGreater(self_calls.get("recurse", 0), 0)   # the recursion was sampled
        for row in doc["functions"]:
            if row["inclusive_samples"] > 0:
                with self.subTest(function=row["name"]):
                    self.assertEqual(theirs.get(row["name"]), row["inclusive_samples"] + self_calls.get(row["name"], 0))


class TwoImages(unittest.TestCase):
    """The bootloader first (QEMU's -kernel), the application beside it (QEMU's loader)."""

    @classmethod
    def setUpClass(cls):
        cls.boot, cls.app = fwtest.elf_path("vendor_boot_m4"), fwtest.elf_path("vendor_app_m4")
        cls.elves = ("--elf", cls.boot, "--elf", cls.app)
        cls.dir = Path(tempfile.mkdtemp(prefix="mcuprof-images-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def test_top_records_both_images(self):
        rec = self.dir / "top.bin"
        r = mcuprof("top", "--qemu", "netduinoplus2", *self.elves, "--samples", "500", "--seed", "3", "-o", rec)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("boot_crc32", r.stdout)   # the bootloader's
        self.assertIn("mix_step", r.stdout)     # the application's
        header = header_of(rec)
        self.assertEqual(header["elf_path"], str(self.boot.resolve()))
        self.assertEqual([image["elf_path"] for image in header["more_elves"]], [str(self.app.resolve())])
        r = mcuprof("report", rec, "--format", "json")   # the images reopened from the header
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertNotIn("?", [row["name"] for row in doc["functions"]])
        self.assertEqual(sum(row["samples"] for row in doc["functions"]), doc["samples"])

    def test_truth_counts_both_images(self):
        census = self.dir / "census.txt"
        r = mcuprof("truth", "--qemu", "netduinoplus2", *self.elves, "--census", census, "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        functions = sorted({(s.start, s.size) for elf in (self.boot, self.app) for s in nm_symbols(elf, "TtWw")
                            if s.size > 0})
        by_function = {}
        for address, count in fwtest.read_counts(census).items():
            owner = next((start for start, size in functions if start <= address < start + size), None)
            by_function[owner] = by_function.get(owner, 0) + count
        self.assertEqual(doc["samples"], sum(by_function.values()))
        self.assertNotIn(None, by_function)   # every instruction counted is in one image's functions
        rows = {row["address"]: row for row in doc["functions"] if "address" in row}
        self.assertEqual({a: row["samples"] for a, row in rows.items()}, by_function)
        names = {row["name"] for row in rows.values()}
        self.assertIn("boot_crc32", names)
        self.assertIn("mix_step", names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
