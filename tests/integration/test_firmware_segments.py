"""Every reference image loads only into the memory its linker script gives it.

QEMU and a probe load an ELF by its LOAD program headers, not by its sections: a segment that
reaches outside the script's MEMORY regions writes bytes the script never placed there. GNU ld
2.44 (Debian 13) did exactly that to the application linked at 0x08004000 until the images
were linked with -n (firmware-ref/CMakeLists.txt, FW_LOAD_FLAGS): its first segment carried the
ELF headers and started at 0x08000000, over the bootloader.

For each image of manifest.json: the MEMORY regions of its linker script (build/firmware-ref-
build/ld/NAME.ld, with the files it INCLUDEs), and `arm-none-eabi-readelf -lW`'s LOAD segments.
Each segment's file bytes (physical address, file size) lie in one region, its memory (virtual
address, memory size) in one region, and no segment holds the ELF header (file offset 0).
"""
import json
import os
import re
import shutil
import subprocess
import unittest
from pathlib import Path

import fwtest

LD_DIR = Path(os.environ.get("MCUPROF_FW_LD_DIR", fwtest.REPO / "build" / "firmware-ref-build" / "ld"))

REGION = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*ORIGIN\s*=\s*([0-9A-Fa-fxX]+)\s*,\s*LENGTH\s*=\s*([0-9A-Fa-fxX]+)([KM]?)",
                    re.MULTILINE)
INCLUDE = re.compile(r"^\s*INCLUDE\s+(\S+)", re.MULTILINE)
SEGMENT = re.compile(r"^\s*LOAD\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)",
                     re.MULTILINE)


def memory_regions(script: Path) -> dict[str, tuple[int, int]]:
    """name -> (origin, end) of each MEMORY line of a GNU ld script and of the scripts it INCLUDEs."""
    text = script.read_text()
    regions = {}
    for name, origin, length, unit in REGION.findall(text):
        size = int(length, 0) * {"": 1, "K": 1024, "M": 1024 * 1024}[unit]
        regions[name] = (int(origin, 0), int(origin, 0) + size)
    for included in INCLUDE.findall(text):
        path = Path(included) if Path(included).is_absolute() else script.parent / included
        regions.update(memory_regions(path))
    return regions


def load_segments(elf: Path) -> list[dict[str, int]]:
    readelf = shutil.which("arm-none-eabi-readelf")
    out = subprocess.run([readelf, "-lW", str(elf)], capture_output=True, text=True, check=True).stdout
    return [dict(zip(("offset", "vaddr", "paddr", "filesz", "memsz"), (int(v, 16) for v in m)))
            for m in SEGMENT.findall(out)]


def misplaced(segments: list[dict[str, int]], regions: dict[str, tuple[int, int]]) -> list[str]:
    """What is wrong with each segment, one line each; empty when every one fits."""
    def inside(start: int, size: int) -> bool:
        return any(lo <= start and start + size <= hi for lo, hi in regions.values())
    problems = []
    for k, s in enumerate(segments):
        if s["offset"] == 0 and s["filesz"] > 0:
            problems.append(f"segment {k} holds the ELF header (file offset 0)")
        if s["filesz"] > 0 and not inside(s["paddr"], s["filesz"]):
            problems.append(f"segment {k} loads {s['paddr']:#x}-{s['paddr'] + s['filesz']:#x}, outside {regions}")
        if s["memsz"] > 0 and not inside(s["vaddr"], s["memsz"]):
            problems.append(f"segment {k} runs at {s['vaddr']:#x}-{s['vaddr'] + s['memsz']:#x}, outside {regions}")
    return problems


class CheckRefusesTheWrongSegments(unittest.TestCase):
    """The check itself, on the segments ld 2.44 wrote for vendor_app_m4 without -n."""

    REGIONS = {"FLASH": (0x08004000, 0x08004000 + 1008 * 1024), "RAM": (0x20000000, 0x20000000 + 128 * 1024)}

    def test_headers_in_the_first_segment_are_refused(self):
        segments = [{"offset": 0, "vaddr": 0x08000000, "paddr": 0x08000000, "filesz": 0x4250, "memsz": 0x4250},
                    {"offset": 0x10000, "vaddr": 0x20000000, "paddr": 0x08004250, "filesz": 0x138, "memsz": 0x240}]
        problems = misplaced(segments, self.REGIONS)
        self.assertEqual(len(problems), 3, problems)   # the header, and both addresses of segment 0
        self.assertTrue(problems[0].startswith("segment 0 holds the ELF header"), problems)

    def test_the_same_image_linked_with_n_passes(self):
        segments = [{"offset": 0x78, "vaddr": 0x08004000, "paddr": 0x08004000, "filesz": 0x250, "memsz": 0x250},
                    {"offset": 0x2c8, "vaddr": 0x20000000, "paddr": 0x08004250, "filesz": 0x138, "memsz": 0x240}]
        self.assertEqual(misplaced(segments, self.REGIONS), [])


class ReferenceImages(unittest.TestCase):
    def test_every_image_loads_inside_its_memory(self):
        if shutil.which("arm-none-eabi-readelf") is None:
            fwtest._missing("arm-none-eabi-readelf (Debian package binutils-arm-none-eabi)")
        images = json.loads((fwtest.FW_DIR / "manifest.json").read_text())
        checked = 0
        for image in images:
            elf = fwtest.FW_DIR / image["elf"]
            if not elf.exists():
                continue   # a Rust image the build left out (NAME.unbuilt says why)
            with self.subTest(image=image["name"]):
                regions = memory_regions(LD_DIR / f"{image['ldscript']}.ld")
                self.assertTrue(regions, image["ldscript"])
                segments = load_segments(elf)
                self.assertTrue(segments, elf)
                self.assertEqual(misplaced(segments, regions), [], elf)
                checked += 1
        self.assertGreater(checked, 50)


if __name__ == "__main__":
    unittest.main()
