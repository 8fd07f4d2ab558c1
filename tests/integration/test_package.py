"""Installing mcuprof: `cmake --install` under a prefix and the CPack .deb unpacked into a
temporary root (dpkg -x), then the installed tool run from there: `--version` prints the version
of CMakeLists.txt's project(), the one place it is set, and a report of truth counts written here
gives the shares computed here from the fixture ELF's symbols (arm-none-eabi-nm)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from elf_symbols import nm_symbols

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("MCUPROF_BUILD_DIR", REPO / "build"))
FIXTURE = BUILD / "tests" / "fixtures" / "symbols_fixture.elf"


def project_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    found = re.search(r"^project\(mcuprof VERSION ([0-9.]+)", text, re.M)
    assert found, "project(mcuprof VERSION ...) not found in CMakeLists.txt"
    return found.group(1)


def function_starts() -> dict[str, int]:
    return {s.name: s.address for s in nm_symbols(FIXTURE)}


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("cpack", "dpkg", "dpkg-deb", "arm-none-eabi-nm"):
            if shutil.which(tool) is None:
                raise AssertionError(f"{tool} is missing (scripts/setup.sh installs it)")
        assert (BUILD / "mcuprof").is_file() and FIXTURE.is_file(), f"build the project first ({BUILD})"
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-package-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def check_tool(self, tool: Path):
        version = subprocess.run([str(tool), "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertEqual(version.stdout, f"mcuprof {project_version()}\n")

        # Truth counts by hand: 3 instructions in func_a, 1 in local_b -> 75 % and 25 %.
        starts = function_starts()
        counts = self.work / f"counts-{tool.parent.parent.name}.txt"
        counts.write_text(f"0x{starts['func_a']:x} 2\n0x{starts['func_a'] + 2:x} 1\n0x{starts['local_b']:x} 1\n")
        report = subprocess.run([str(tool), "report", str(counts), "--elf", str(FIXTURE), "--format", "json"],
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(report.returncode, 0, report.stderr)
        shares = {r["name"]: r["percent"] for r in json.loads(report.stdout)["functions"]}
        self.assertEqual(shares, {"func_a": 75.0, "local_b": 25.0})

    def test_cmake_install_under_a_prefix(self):
        prefix = self.work / "prefix"
        subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True,
                       capture_output=True, timeout=300)
        self.check_tool(prefix / "bin" / "mcuprof")
        self.assertTrue(list(prefix.glob("lib*/**/mcuprof/libtruth.so")), "the truth plugin")
        self.assertTrue((prefix / "share" / "mcuprof" / "configs" / "openocd" / "qemu-vprobe.cfg").is_file())
        self.assertTrue((prefix / "share" / "doc" / "mcuprof" / "ci.md").is_file())

    def test_deb_unpacked_into_a_root(self):
        out = self.work / "cpack"
        made = subprocess.run(["cpack", "-G", "DEB", "--config", str(BUILD / "CPackConfig.cmake"), "-B", str(out)],
                              capture_output=True, text=True, timeout=600)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        debs = list(out.glob("mcuprof_*.deb"))
        self.assertEqual(len(debs), 1, made.stdout)
        fields = subprocess.run(["dpkg-deb", "-f", str(debs[0]), "Package", "Version", "Depends"],
                                capture_output=True, text=True, check=True).stdout
        self.assertIn("Package: mcuprof", fields)
        self.assertIn(f"Version: {project_version()}", fields)
        self.assertRegex(fields, r"Depends: .*libc6")   # dpkg-shlibdeps named the libraries
        root = self.work / "root"
        subprocess.run(["dpkg", "-x", str(debs[0]), str(root)], check=True, timeout=120)
        self.check_tool(root / "usr" / "bin" / "mcuprof")
        self.assertTrue(list((root / "usr").glob("lib*/**/mcuprof/libtruth.so")), "the truth plugin")


if __name__ == "__main__":
    unittest.main()
