"""The question benchmark's data (benchmarks/interview/) stays what its header says: real threads, facts in
the fixed vocabulary, causes the KB holds, and a holdout that shares no thread with what fixer was built
or tuned on."""

from __future__ import annotations

import pytest
import yaml
from conftest import CORPUS, ROOT, thread

from fixer.kb.catalog import Catalog

INTERVIEW = ROOT / "benchmarks" / "interview"
VOCABULARY = set(yaml.safe_load((INTERVIEW / "facts.yaml").read_text()))


def _items(name: str) -> list[dict]:
    return yaml.safe_load((INTERVIEW / name).read_text())


@pytest.mark.parametrize("name", ["tune.yaml", "holdout.yaml"])
def test_items_name_known_causes_and_only_facts_of_the_vocabulary(name: str, catalog: Catalog):
    items = _items(name)
    assert len({item["id"] for item in items}) == len(items)
    for item in items:
        assert catalog.get(item["expect"]) is not None, item["id"]
        assert set(item["facts"]) <= VOCABULARY, item["id"]
        assert set(item["facts"].values()) <= {"yes", "no"}, item["id"]
        assert str(item["source"]).startswith("https://") and item["traceback"].strip(), item["id"]
        assert sum(item["facts"].get(f) == "yes" for f in VOCABULARY if f.startswith("fails-")) <= 1, item["id"]


def test_the_holdout_shares_no_thread_with_the_kb_the_corpora_or_the_tune_half(catalog: Catalog):
    used = {thread(example.source) for entry in catalog for example in entry.examples}
    used |= {thread(item["source"]) for item in _items("tune.yaml")}
    for corpus in (CORPUS, ROOT / "benchmarks" / "unseen" / "tune.yaml"):
        if corpus.exists():
            used |= {thread(item["source"]) for item in yaml.safe_load(corpus.read_text())}
    holdout = [thread(item["source"]) for item in _items("holdout.yaml")]
    assert len(holdout) >= 60 and len(set(holdout)) == len(holdout)
    assert not set(holdout) & used
