"""`fixer diagnose --markdown`: one `<details>` block to paste into a GitHub issue or a forum post.

Maintainers asked for the same four things in every thread: the torch build, the GPUs, what was on
which device, and the traceback. The block carries them folded, so the issue stays readable.
"""

from __future__ import annotations

from fixer.diagnose.findings import Finding
from fixer.explain.match import Match

_MARK = {"confirms": "✅ confirms", "rules-out": "❌ rules out", "could-not-check": "❔ could not check", "info": "ℹ️"}


def issue_markdown(findings: list[Finding], matches: list[Match], traceback: str | None) -> str:
    lead = f"most likely `{matches[0].id}`" if matches else "no KB entry matched"
    rows = "\n".join(
        f"| `{f.probe}` | {_MARK[f.verdict]} | {', '.join(f'`{e}`' for e in f.entries)} | {_cell(f.summary)} |"
        for f in findings
    )
    parts = [
        f"<details><summary>fixer diagnose: {lead}</summary>",
        "",
        "| probe | verdict | entries | what it saw |",
        "|---|---|---|---|",
        rows,
    ]
    if matches:
        parts += ["", "Likely causes:", ""]
        parts += [f"{n}. `{m.id}`: {m.entry.title} (score {m.score})" for n, m in enumerate(matches, 1)]
    if traceback:
        fence = "````" if "```" in traceback else "```"
        parts += ["", f"{fence}text", traceback.rstrip(), fence]
    parts += ["", "</details>"]
    return "\n".join(parts) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
