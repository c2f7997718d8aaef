"""The KB's index: ranks exactly as the catalog it was built from, is read back from the cache while the
KB's files are unchanged, and is rebuilt, never trusted, when they change or the cache is damaged."""

from __future__ import annotations

import os
import shutil
from collections import Counter

import pytest
from conftest import ROOT, corpus_items, kb_examples

from fixer.explain import literals
from fixer.explain.match import Matcher
from fixer.kb import index
from fixer.kb.catalog import load
from fixer.kb.index import build, dumps, loads

TEXTS = [text for _, _, text in kb_examples()] + [item["traceback"] for item in corpus_items()]


def _ranking(matcher: Matcher, text: str) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(m.id, m.score, tuple(r.text for r in m.reasons)) for m in matcher.explain(text).matches]


def test_an_index_read_back_ranks_as_the_catalog_does(catalog, matcher):
    indexed = Matcher(loads(dumps(build(catalog))))
    differ = [text[:80] for text in TEXTS if _ranking(indexed, text) != _ranking(matcher, text)]
    assert differ == []
    assert len(TEXTS) > 100


def test_a_card_shows_what_the_entry_says_and_reads_the_rest_from_its_file(catalog):
    card = next(e.card for e in loads(dumps(build(catalog))).entries if e.card.id == "model-not-moved")
    entry = catalog.get("model-not-moved")
    assert (card.title, card.fix_codemod, card.diagnostics) == (
        entry.title,
        entry.fix.codemod,
        tuple(entry.diagnostics),
    )
    assert card.loaded is None and card.entry == entry


def test_building_an_index_parses_each_regex_once(kb, monkeypatch):
    """Parsing regexes is most of what a large KB costs to index: validating an entry, indexing its
    signatures and indexing its rules share one parse of each pattern."""
    literals.analyse.cache_clear()
    parsed = Counter()
    parse = literals._sre_parser.parse

    def counted(pattern, *args, **kwargs):
        parsed[pattern] += 1
        return parse(pattern, *args, **kwargs)

    monkeypatch.setattr(literals._sre_parser, "parse", counted)
    built = build(load(kb, team=()))
    assert len(parsed) > 400
    assert [p for p, times in parsed.items() if times > 1] == []
    assert all(signature.pattern.pattern in parsed for e in built.entries for signature in e.signatures)


@pytest.fixture
def kb(tmp_path):
    root = tmp_path / "kb"
    shutil.copytree(ROOT / "kb", root)
    return root


def test_the_cache_is_read_while_the_files_are_unchanged(kb, monkeypatch):
    first = index.load(kb, ())
    monkeypatch.setattr(index, "build", lambda catalog: pytest.fail("rebuilt an index whose KB did not change"))
    again = index.load(kb, ())
    assert [e.card for e in again.entries] == [e.card for e in first.entries]


def test_a_changed_file_rebuilds_the_index(kb):
    index.load(kb, ())
    entry = kb / "model-not-moved.yaml"
    entry.write_text(entry.read_text().replace("title: ", "title: Changed, ", 1))
    os.utime(entry, ns=(entry.stat().st_atime_ns, entry.stat().st_mtime_ns + 1_000_000_000))
    titles = {e.card.id: e.card.title for e in index.load(kb, ()).entries}
    assert titles["model-not-moved"].startswith("Changed, ")


def test_a_changed_module_of_fixer_changes_the_fingerprint(kb, tmp_path, monkeypatch):
    """An editable install that was pulled parses examples anew: its cached index must not be trusted."""
    package = tmp_path / "fixer"
    for module in ("kb/index.py", "explain/normalise.py"):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("")
    monkeypatch.setattr(index, "__file__", str(package / "kb" / "index.py"))
    before = index.fingerprint((kb,))
    (package / "explain" / "normalise.py").write_text("# a new placeholder\n")
    assert index.fingerprint((kb,)) != before


def test_a_removed_file_leaves_the_index(kb):
    index.load(kb, ())
    (kb / "model-not-moved.yaml").unlink()
    assert "model-not-moved" not in {e.card.id for e in index.load(kb, ()).entries}


@pytest.mark.parametrize("damage", ["", "{", '{"entries": 3}', "null", "[1, 2]"])
def test_a_damaged_cache_file_is_rebuilt(kb, damage):
    built = index.load(kb, ())
    (cached,) = (index.cache.directory() / "index").glob("*.json")
    cached.write_text(damage)
    assert len(index.load(kb, ()).entries) == len(built.entries)
    assert cached.read_text() != damage


def test_a_cache_that_cannot_be_written_still_gives_an_index(kb, tmp_path, monkeypatch):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("FIXER_CACHE_DIR", str(blocked))
    assert len(index.load(kb, ()).entries) == len(list(kb.glob("*.yaml")))


def test_skipped_files_are_said_again_from_the_cache(kb):
    (kb / "broken.yaml").write_text("id: [unclosed\n")
    assert any("broken.yaml" in problem for problem in index.load(kb, ()).problems)
    assert any("broken.yaml" in problem for problem in index.load(kb, ()).problems)


def test_an_entry_damaged_after_the_index_was_read_is_one_line_and_exit_70(kb, tmp_path, monkeypatch, capsys):
    from fixer.cli import main

    monkeypatch.setenv("FIXER_KB", str(kb))
    index.load(kb, ())
    (cached,) = (index.cache.directory() / "index").glob("*.json")
    head, _, body = cached.read_text().partition("\n")
    cached.write_text(head + "\n" + body.replace('"card"', '"crad"'))
    paste = tmp_path / "paste.txt"
    paste.write_text(kb_examples()[0][2])
    assert main(["explain", str(paste)]) == 70
    assert capsys.readouterr().err.strip().startswith("fixer: fixer's KB index is damaged")


def test_an_index_read_back_compiles_its_regexes_without_parsing_them(kb, monkeypatch):
    """Each regex keeps the program re's compiler made of it: a process that reads the index ranks every
    KB example with no KB pattern parsed again, and exactly as the index built from the files does."""
    texts = [text for _, _, text in kb_examples()]
    built = Matcher(build(load(kb, team=())), read_code=False)
    expected = [[(m.id, m.score) for m in built.explain(t).matches] for t in texts]
    index.load(kb, ())
    literals._COMPILED.clear()  # the regexes compiled so far, shared by pattern
    monkeypatch.setattr(literals._sre_parser, "parse", lambda *a, **k: pytest.fail(f"parsed {a[0]!r} again"))
    read_back = Matcher(index.load(kb, ()), read_code=False)
    assert [[(m.id, m.score) for m in read_back.explain(t).matches] for t in texts] == expected
