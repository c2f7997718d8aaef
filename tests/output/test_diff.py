"""Diff lines are classified by counting hunks, and written byte for byte."""

from __future__ import annotations

import io
import re

from fixer.output import diff

DIFF = (
    "--- a/q.py\n+++ b/q.py\n@@ -1,3 +1,3 @@\n"
    "--- removed line that reads like a header\n"
    "+++ added line that reads like a header\n"
    " \tcontext with a tab\r\n"
    " last\n"
    "\\ No newline at end of file\n"
)


def test_hunk_lines_are_counted_not_guessed_from_their_first_characters():
    kinds = [kind for kind, _, _ in diff.lines(DIFF)]
    assert kinds == ["header", "header", "hunk", "removed", "added", "context", "context", "context"]


def test_without_colour_the_bytes_are_the_diff():
    out = io.BytesIO()
    diff.write(DIFF, out, color=False)
    assert out.getvalue() == DIFF.encode()


def test_colour_wraps_each_line_and_keeps_its_content_and_ending():
    out = io.BytesIO()
    diff.write(DIFF, out, color=True)
    written = out.getvalue().decode()
    assert "\x1b[31m--- removed line that reads like a header\x1b[0m\n" in written
    assert " \tcontext with a tab\r\n" in written
    assert re.sub(r"\x1b\[[0-9;]*m", "", written) == DIFF
