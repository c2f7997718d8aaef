"""One engine behind every surface: `fixer explain`, `fixer scan` (on this machine and on Dask) and the
excepthook read and rank a traceback the same way, and differ only in what they can see. Every real
paste in the dev corpus and every KB example is run through each and must get the same first place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import CORPUS, kb_examples

from fixer.cli import OK, main
from fixer.explain.match import Matcher

CASES = [(f"{entry}#{number}", text) for entry, number, text in kb_examples()] + [
    (case["id"], case["traceback"]) for case in yaml.safe_load(CORPUS.read_text())
]


@pytest.fixture(scope="module")
def pastes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each case as the one log of a job, as a cluster's log directory holds them."""
    root = tmp_path_factory.mktemp("pastes")
    for number, (_, text) in enumerate(CASES):
        (root / f"{number:04d}.log").write_text(text)
    return root


@pytest.fixture(scope="module")
def explained(catalog) -> list[str | None]:
    """`fixer explain`'s first place for each case, or None where it finds no traceback."""
    matcher = Matcher(catalog)
    firsts = []
    for _, text in CASES:
        result = matcher.explain(text)
        firsts.append((result.matches[0].id if result.matches else "") if result.traceback is not None else None)
    return firsts


def _scanned(document: dict) -> dict[int, str]:
    """The first place scan gives each file's last traceback (a paste is one error; a chain is one block)."""
    firsts: dict[int, str] = {}
    for found in document["found"]:
        firsts[int(Path(found["file"]).stem)] = found["cause"] or ""
    return firsts


def _disagreements(explained: list[str | None], scanned: dict[int, str]) -> list[str]:
    return [
        f"{CASES[n][0]}: explain {first!r}, scan {scanned.get(n, 'no traceback')!r}"
        for n, first in enumerate(explained)
        if first is not None and scanned.get(n) != first
    ]


def test_scan_gives_every_paste_the_first_place_explain_gives(pastes, explained, capsys):
    assert len(CASES) > 150
    assert main(["scan", "--json", "--workers", "2", str(pastes)]) == OK
    assert _disagreements(explained, _scanned(json.loads(capsys.readouterr().out))) == []


def test_scan_on_dask_gives_every_paste_the_first_place_explain_gives(pastes, explained, capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["scan", "--json", "--dask", cluster.scheduler_address, str(pastes)]) == OK
    assert _disagreements(explained, _scanned(json.loads(capsys.readouterr().out))) == []
