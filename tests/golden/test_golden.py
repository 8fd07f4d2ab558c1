"""The golden test: every report output of a fixed set of inputs, byte for byte.

Before the source tree moves (issue 50), this pins what `mcuprof report`, `truth`, `diff` and
`report --calls`/`--packets` write for inputs made once and committed (inputs/, README.md says
how): every `--format` of each command, in every grouping (`--by`) that applies to the input,
with their standard error and exit status, refusals included. An output that differs is a
change of behaviour: a fix named in its commit, with expected/ regenerated there
(regenerate.py), or a regression.

Runs the tool of the build the other tests use ($MCUPROF_CLI, else build/mcuprof), with a
scratch copy of inputs/ as its working directory; needs no QEMU, OpenOCD or network.

What is normalised before comparing (golden.normalise, the one place):
- the scratch folder's absolute path, written `<scratch>`: only the reopened recordings
  (report without --elf, golden.REOPENED_CASES) name their ELFs by it.
Nothing else is: no output holds a time of day, a host name, or a path other than the inputs'
own (the mismatch cases print the recorded `elf_path`, /work/main/..., from the committed
header, the same in any clone). Stored losslessly in another form (golden.py): HTML pages
with their shared d3 script as a mark. pprof's .pb.gz is compared byte for byte too: it embeds no time (its gzip header's
mtime is 0), so only a change of zlib's compressor could change its bytes without a change of
the profile (the message then says whether the decompressed protobufs are equal).

On a difference, each test prints the first differing output (a unified diff of text, or the
sizes and first differing offset of binary) and names every other one that differs.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import unittest
from pathlib import Path

import golden

STRICT = bool(os.environ.get("MCUPROF_UNDER_CTEST"))


class Golden(unittest.TestCase):
    results: dict[str, golden.Result] = {}

    @classmethod
    def setUpClass(cls):
        if not golden.CLI.is_file():
            message = f"{golden.CLI} is missing: make build (or set MCUPROF_CLI)"
            if STRICT:
                raise AssertionError(message)
            raise unittest.SkipTest(message)
        cls.scratch = Path(tempfile.mkdtemp(prefix="mcuprof-golden-"))
        started = time.monotonic()
        try:
            cls.results = golden.run_all(cls.scratch)
        finally:
            shutil.rmtree(cls.scratch, ignore_errors=True)
        print(f"\ngolden: {len(cls.results)} commands in {time.monotonic() - started:.1f} s", file=sys.stderr)

    def check(self, prefix: str) -> None:
        chosen = [c for c in golden.cases() if c.path.startswith(prefix)]
        self.assertTrue(chosen, f"no case under {prefix}")
        differing = [(c, text) for c in chosen if (text := golden.compare(c, self.results[c.path])) is not None]
        if differing:
            first = differing[0][1]
            others = "".join(f"\n  {c.path}" for c, _ in differing[1:])
            self.fail(f"{len(differing)} of {len(chosen)} outputs under expected/{prefix} differ; the first:\n"
                      f"{first}" + (f"\nand also:{others}" if others else ""))

    def test_report_every_format_and_grouping(self):
        self.check("report/")

    def test_truth(self):
        self.check("truth/")

    def test_diff(self):
        self.check("diff/")

    def test_call_graphs_and_packets(self):
        self.check("calls/")
        self.check("packets/")

    def test_elf_mismatch_and_refusals(self):
        self.check("mismatch/")
        self.check("refused/")

    def test_recordings_reopen_their_images(self):
        self.check("reopened/")

    def test_nothing_stored_that_no_case_writes(self):
        """expected/ holds exactly the cases' files and the scripts their pages use: a stale
        file, or a case whose file is missing, is not passed over."""
        wanted = set()
        nothing = []
        for case in golden.cases():
            out_path, err_path = golden.expected_files(case)
            wanted.update(p for p in (out_path, err_path) if p.is_file())
            if not (out_path.is_file() or err_path.is_file()):
                nothing.append(case.path)
        self.assertEqual(nothing, [], "cases with nothing stored (run tests/golden/regenerate.py?)")
        used = set()
        for path in wanted:
            if path.suffix == ".html":
                used.update(golden.ASSETS / f"{m.group(1).decode()}.js"
                            for m in golden.ASSET_MARK.finditer(path.read_bytes()))
        stored = {p for p in golden.EXPECTED.rglob("*") if p.is_file()}
        self.assertEqual(sorted(str(p) for p in stored - wanted - used), [], "stored, but no case writes it")
        self.assertEqual(sorted(str(p) for p in used - stored), [], "an HTML page's shared script is missing")

    def test_the_cases_are_not_vacuous(self):
        """Most commands succeed (a tool that failed every command would pin only errors), and
        each command of the matrix produced output or an error."""
        self.assertGreater(len(self.results), 700)
        succeeded = [p for p, r in self.results.items() if r.status == 0 and r.output]
        self.assertGreater(len(succeeded), 0.75 * len(self.results))
        for source in golden.REPORTS:
            self.assertEqual(self.results[f"report/{source}/function.txt"].status, 0, source)


if __name__ == "__main__":
    unittest.main()
