"""`fixer diagnose --markdown` and `fixer explain --markdown`: one `<details>` block to paste into a
GitHub issue or a forum post.

Maintainers asked for the same four things in every thread: the torch build, the GPUs, what was on
which device, and the traceback. The block carries them folded, so the issue stays readable. It holds
the traceback as fixer read it, never the log around it: a training log is hundreds of lines of
progress, prompts and echoed settings that help no reader and can give away what should stay private.
"""

from __future__ import annotations

from fixer.diagnose.findings import Finding
from fixer.explain.match import Match
from fixer.explain.parse import RaisedException, Traceback

_MARK = {"confirms": "✅ confirms", "rules-out": "❌ rules out", "could-not-check": "❔ could not check", "info": "ℹ️"}


def issue_markdown(command: str, findings: list[Finding], matches: list[Match], traceback: Traceback | None) -> str:
    """The block `fixer COMMAND --markdown` prints: `explain` has no probes, so no table of findings."""
    lead = f"most likely `{matches[0].id}`" if matches else "no KB entry matched"
    parts = [f"<details><summary>fixer {command}: {lead}</summary>"]
    if findings:
        parts += ["", "| probe | verdict | entries | what it saw |", "|---|---|---|---|"]
        parts += [
            f"| `{f.probe}` | {_MARK[f.verdict]} | {', '.join(f'`{e}`' for e in f.entries)} | {_cell(f.summary)} |"
            for f in findings
        ]
    if matches:
        parts += ["", "Likely causes:", ""]
        parts += [f"{n}. `{m.id}`: {m.entry.title} (score {m.score})" for n, m in enumerate(matches, 1)]
    if traceback is not None:
        text = traceback_text(traceback)
        fence = "````" if "```" in text else "```"
        parts += ["", f"{fence}text", text.rstrip(), fence]
    parts += ["", "</details>"]
    return "\n".join(parts) + "\n"


def traceback_text(traceback: Traceback) -> str:
    """The exceptions of the chain, oldest first, each as Python prints it: its frames with their lines,
    then its type and message; the rank it came from first, when there were several."""
    blocks = [_raised_text(raised) for raised in (*traceback.chain, traceback.final)]
    rank = f"[rank{traceback.rank}] of ranks {', '.join(map(str, traceback.ranks))}\n" if traceback.ranks else ""
    return rank + "\n".join(blocks)


def _raised_text(raised: RaisedException) -> str:
    lines = ["Traceback (most recent call last):"] if raised.frames else []
    for frame in raised.frames:
        where = f", line {frame.line}" if frame.line is not None else ""
        function = f", in {frame.function}" if frame.function else ""
        lines.append(f'  File "{frame.path}"{where}{function}')
        if frame.code:
            lines.append(f"    {frame.code}")
    lines.append(f"{raised.type}: {raised.message}" if raised.type else raised.message)
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
