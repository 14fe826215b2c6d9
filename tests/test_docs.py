"""What a reader is shown says what it means without a tracker's numbers: no "issue 47 item 3" in the package, the
app, the docs or the README. A reference to an issue tells a reader nothing they can open from a clone; the reason
it stood for is written out instead, and the history stays in git."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("hedgekit", "app", "docs", "README.md")
# "issue 45", "Issue 49", "issue #12", "issues 37 and 50", "issue-35", and a number on the comment line after "issue"
ISSUE_NUMBER = re.compile(r"\bissues?[ \t]*(?:-|\n[ \t]*#?)?[ \t]*#?[ \t]*\d", re.IGNORECASE)


def issue_references(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every reference to an issue by its number in ``text``."""
    lines = text.splitlines()
    return [(n, lines[n - 1].strip()) for n in sorted({text.count("\n", 0, m.start()) + 1
                                                       for m in ISSUE_NUMBER.finditer(text)})]


@pytest.mark.parametrize("text, found", [
    ("a fix (issue 45 item 6): one paragraph", [1]),
    ("Issue 49 asked for it", [1]),
    ("see issue #12", [1]),
    ("issues 37 and 50's check", [1]),
    ("the issue-35 set-up", [1]),
    ("ok\n# the share it kept; issue\n# 49 item 3). Runs", [2]),
    ("the issue's baseline, 49 images, tissue 5", []),
])
def test_the_check_finds_every_form_of_an_issue_number(text, found):
    assert [n for n, _ in issue_references(text)] == found


def _scanned_files():
    for top in SCANNED:
        path = ROOT / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts:
                continue
            data = p.read_bytes()
            if b"\0" in data[:8192]:  # checkpoints, images, arrays
                continue
            yield p, data.decode("utf-8", errors="replace")


def test_no_issue_numbers_in_what_a_reader_is_shown():
    """Every text file of the package (code, docstrings, comments, stored records such as the shipped leaderboard's
    description), the app, docs/ and the README."""
    found = [f"{p.relative_to(ROOT).as_posix()}:{n}: {line[:100]}"
             for p, text in _scanned_files() for n, line in issue_references(text)]
    assert not found, "say what the issue stood for instead of its number:\n" + "\n".join(found)
