"""The command lines the docs show: from the code of README.md and docs/*.md (``` fences and
four-space indented blocks), a line continued with a backslash joined and a trailing
`# comment` dropped, for the tests that run each one as written."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def command_lines(text: str, program: str) -> list[str]:
    """The lines of `text` that run `program`."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [re.sub(r"\s+#.*$", "", line.strip()) for line in joined.splitlines()
            if line.strip().startswith(program + " ")]


def code_blocks(markdown: str) -> list[str]:
    blocks = re.findall(r"```[^\n]*\n(.*?)```", markdown, flags=re.S)
    blocks += ["\n".join(l[4:] for l in block.splitlines())
               for block in re.findall(r"(?:^(?:    .*)?\n)+", markdown, flags=re.M)]
    return blocks


def documented(program: str, extra: list[tuple[str, str]] = ()) -> dict[str, list[str]]:
    """Each line running `program` in the docs' code (and in the `extra` (where, text) pairs),
    with where it was found."""
    sources = list(extra)
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        sources += [(str(path.relative_to(REPO)), block) for block in code_blocks(path.read_text())]
    found: dict[str, list[str]] = {}
    for where, text in sources:
        for line in command_lines(text, program):
            found.setdefault(line, []).append(where)
    return found
