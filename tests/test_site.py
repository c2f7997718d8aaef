"""The static site builds from the KB, strictly, and loads nothing from the internet."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def test_every_entry_has_a_page_with_its_sources(site, catalog):
    for entry in catalog:
        page = (site / "entries" / entry.id / "index.html").read_text()
        assert entry.title.split()[0] in page
        for example in entry.examples:
            assert str(example.source) in page


def test_reference_pages_come_from_the_package(site):
    assert "fixer explain" in (site / "cli" / "index.html").read_text()
    assert "matches" in (site / "json" / "index.html").read_text()


def test_nothing_is_loaded_from_the_internet(site):
    loads = re.compile(r'<(?:script|link|img|iframe)[^>]+(?:src|href)="(https?:)?//', re.I)
    offenders = [p.name for p in site.rglob("*.html") if loads.search(p.read_text())]
    assert offenders == []


def test_every_entry_has_a_bare_embed_view_kept_out_of_search(site, catalog):
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert [doc["location"] for doc in index["docs"] if doc["location"].startswith("embed/")] == []
    chrome = re.compile(r'class="md-(?:header|tabs|sidebar|search|footer)\b|data-md-component="search"')
    for entry in catalog:
        embed = (site / "embed" / entry.id / "index.html").read_text()
        assert "<h1" in embed and entry.title.split()[0] in embed
        assert not chrome.search(embed), entry.id
        page = (site / "entries" / entry.id / "index.html").read_text()
        assert f'href="../../embed/{entry.id}/"' in page
        assert f'<code data-fixer-embed="../../embed/{entry.id}/">&lt;iframe src=' in page


def test_the_training_path_is_on_the_site_and_kept_out_of_search(site, catalog):
    """Search previews would show the answers; each answer links to its entry's page."""
    page = (site / "training" / "index.html").read_text()
    exercises = [e for e in catalog if e.repro is not None and e.repro.needs == "cpu"]
    assert page.count("<details") == len(exercises)
    for entry in exercises:
        assert f'href="../entries/{entry.id}/"' in page, entry.id
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert not [doc["location"] for doc in index["docs"] if doc["location"].startswith("training")]


def test_quiz_answers_are_kept_out_of_the_search_index(site, catalog):
    """Search previews show indexed text: an answer there would give the quiz away."""
    index = json.dumps(json.loads((site / "search" / "search_index.json").read_text()))
    assert "Answer:" not in index
    for entry in catalog:
        assert entry.quiz.explanation.strip()[:60] not in index, entry.id


def test_the_python_api_has_a_page_naming_each_entry_point(site):
    page = (site / "python-api" / "index.html").read_text()
    for name in ("fixer.audit(", "fixer.install()", "%load_ext fixer"):
        assert name in page, name
