"""`fixer run` under torchrun: every rank diagnoses itself, and rank 0 prints one report for the job.

A device error in a distributed job usually hits every rank at once, and N copies of one explanation
bury what differs between the ranks: the device each ran on. So each rank sends rank 0 a small
report, and rank 0 prints a table (one row per rank) and explains each distinct cause once.

The reports travel over a gloo group of fixer's own, created with a timeout, never over the script's
groups: a rank that never arrives (blocked in the script's own collective, or already gone) must cost
the others that timeout, not a hang, and must not be mistaken for the script's next collective. When
no report can be gathered, each failing rank prints its own, every line prefixed with `[rank N]`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import timedelta

import torch
import torch.distributed as dist
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from fixer.diagnose.findings import Finding
from fixer.runner import Outcome

DEFAULT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class RankReport:
    """What one rank saw, in plain values: it is pickled to rank 0 whatever the script's objects hold."""

    rank: int
    local_rank: int
    world_size: int
    device: str
    model_device: str | None
    code: int
    module: str | None = None
    culprit: str | None = None
    cause: str | None = None
    text: str | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def failed(self) -> bool:
        return self.code != 0

    @property
    def status(self) -> str:
        if self.text is not None:
            return "failed"
        return f"exit {self.code}" if self.code else "ok"


def launched(env: Mapping[str, str]) -> bool:
    """torchrun sets RANK for every worker, even for one process; other launchers may set only WORLD_SIZE."""
    return "RANK" in env or int(env.get("WORLD_SIZE") or 1) > 1


def timeout(env: Mapping[str, str]) -> timedelta:
    """How long a rank waits for the others: long enough for ranks that fail a step apart, short enough
    that a rank whose peers are stuck in a collective reports, and ends the job, soon after."""
    seconds = float(env.get("FIXER_RANK_TIMEOUT") or DEFAULT_TIMEOUT_S)
    if not seconds > 0:
        raise ValueError(f"FIXER_RANK_TIMEOUT must be a positive number of seconds, not {seconds:g}")
    return timedelta(seconds=seconds)


def _current_device(model_device: str | None) -> str:
    if torch.cuda.is_available():
        with suppress(RuntimeError):  # a broken CUDA context (after a device-side assert) can refuse to answer
            return f"cuda:{torch.cuda.current_device()}"
    return model_device or str(torch.empty(0).device)


def local_report(outcome: Outcome, cause: str | None, env: Mapping[str, str]) -> RankReport:
    """This rank's report; findings lose their facts, which may hold objects that do not pickle."""
    culprit = outcome.culprit
    model_device = None
    if culprit is not None:  # the culprit may be the model's root, whose own tensors then say where it lives
        own = Counter(culprit.own.values()).most_common(1)
        model_device = culprit.model_device or (own[0][0] if own else None)
    return RankReport(
        rank=int(env.get("RANK") or 0),
        local_rank=int(env.get("LOCAL_RANK") or 0),
        world_size=int(env.get("WORLD_SIZE") or 1),
        device=_current_device(model_device),
        model_device=model_device,
        code=outcome.code,
        module=culprit.path if culprit else None,
        culprit=culprit.describe() if culprit else None,
        cause=cause,
        text=outcome.text,
        findings=tuple(replace(finding, facts={}) for finding in outcome.findings),
    )


def has_group() -> bool:
    return dist.is_available() and dist.is_initialized()


@contextmanager
def gathered(report: RankReport, wait: timedelta) -> Iterator[list[RankReport] | None]:
    """Every rank's report on rank 0, [] on the others, None when the ranks could not all be reached.

    The other ranks hold on until rank 0 leaves the block: torchrun stops the whole job as soon as one
    rank exits with an error, which would cut rank 0 off in the middle of printing the report.
    """
    try:
        group = dist.new_group(backend="gloo", timeout=wait)
        reports: list[RankReport | None] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(report, reports, dst=0, group=group)
    except RuntimeError:  # a timeout, a rank that exited, a broken transport: DistError and gloo's own errors
        yield None
        return
    try:
        yield [r for r in reports if r is not None] if reports is not None else []
    finally:
        with suppress(RuntimeError):  # rank 0 gone or slow: the report was its to print either way
            dist.barrier(group=group)


def _rank_list(ranks: Sequence[int]) -> str:
    """`ranks 0–3, 6`: a job of 64 ranks that all fail the same way still fits on one line."""
    spans: list[list[int]] = []
    for rank in sorted(ranks):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    text = ", ".join(str(a) if a == b else f"{a}{'–' if b > a + 1 else ', '}{b}" for a, b in spans)
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {text}"


def _grouped(reports: Sequence[RankReport], key: Callable[[RankReport], str | None]) -> list[list[RankReport]]:
    groups: dict[str | None, list[RankReport]] = {}
    for report in reports:
        groups.setdefault(key(report), []).append(report)
    return list(groups.values())


def combine(reports: Sequence[RankReport], explain: Callable[[RankReport], RenderableType | None]) -> Group:
    """The ranks side by side, then each distinct cause once: `explain` renders one rank's explanation."""
    reports = sorted(reports, key=lambda r: r.rank)
    world = max(r.world_size for r in reports)
    failed = [r for r in reports if r.failed]
    if len(reports) == world:
        head = f"fixer: {len(failed)} of {world} ranks failed"
    else:
        head = f"fixer: {_rank_list([r.rank for r in reports])} of {world}"
    rows = [
        (str(r.rank), str(r.local_rank), r.device, r.model_device or "?", r.status, r.module or "",
         r.cause or ("no KB match" if r.text is not None else ""))
        for r in reports
    ]  # fmt: skip
    table = Table(box=None, header_style="bold", pad_edge=False)
    for i, column in enumerate(("rank", "local", "device", "model on", "status", "failing module", "cause")):
        short = i < 5  # kept whole on a narrow terminal; the module path and the cause id fold instead
        width = max(len(column), *(len(row[i]) for row in rows)) if short else None
        table.add_column(column, no_wrap=short, min_width=width, overflow="fold")
    for row in rows:  # as Text: a module path is the user's text, never markup
        cells = [Text(cell) for cell in row]
        cells[4].stylize("green" if row[4] == "ok" else "red")
        table.add_row(*cells)
    parts: list[RenderableType] = [Text(head, style="bold"), table, Text()]
    for same_cause in _grouped([r for r in reports if r.text is not None], lambda r: r.cause):
        first = same_cause[0]
        title = f"{_rank_list([r.rank for r in same_cause])}: {first.cause or 'no KB entry matches'}"
        parts.append(Text(title, style="bold cyan"))
        for same_culprit in _grouped([r for r in same_cause if r.culprit], lambda r: r.culprit):
            where = _rank_list([r.rank for r in same_culprit])
            parts.append(Text(f"the failing module on {where} was {same_culprit[0].culprit}"))
        view = explain(first)
        parts.extend([Text(), view, Text()] if view is not None else [Text()])
    return Group(*parts)


def prefixed(text: str, rank: int) -> str:
    """Each line marked, so that reports printed by several ranks at once can still be told apart."""
    return "".join(f"[rank {rank}] {line}" for line in text.splitlines(keepends=True))
