"""The census (benchmarks/census/census.yaml) stays what its header says: real threads kept apart from
everything fixer was built or tuned on, causes the KB holds or says it lacks, and a split fixed by a hash."""

from __future__ import annotations

import hashlib

import yaml
from conftest import ROOT, thread, threads_outside

from fixer.kb.catalog import Catalog

CENSUS = ROOT / "benchmarks" / "census"
ITEMS = yaml.safe_load((CENSUS / "census.yaml").read_text(encoding="utf-8"))


def test_items_are_whole_and_name_a_kb_cause_or_a_new_one(catalog: Catalog) -> None:
    assert len({item["id"] for item in ITEMS}) == len(ITEMS)
    for item in ITEMS:
        assert str(item["source"]).startswith("https://") and item["traceback"].strip(), item["id"]
        assert isinstance(item["decidable"], bool), item["id"]
        expect = item["expect"]
        if expect.startswith("new:"):
            assert item.get("new_cause"), item["id"]
        else:
            assert catalog.get(expect) is not None, item["id"]


def test_the_split_is_the_hash_of_the_source() -> None:
    for item in ITEMS:
        first = hashlib.sha256(item["source"].rstrip("/").encode()).digest()[0]
        assert item["half"] == ("tune" if first % 2 == 0 else "holdout"), item["id"]


def test_no_thread_is_also_a_kb_example_or_in_another_benchmark(catalog: Catalog) -> None:
    threads = [thread(item["source"]) for item in ITEMS]
    assert len(set(threads)) == len(threads)
    assert not set(threads) & threads_outside(catalog, CENSUS / "census.yaml")


def test_every_stratum_has_its_log() -> None:
    for stratum in {item["stratum"] for item in ITEMS}:
        assert list((CENSUS / "strata").glob(f"s*-{stratum}.md")), stratum
