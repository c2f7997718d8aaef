"""Top-1/top-3 of fixer's matcher on a labelled corpus, per entry, against two text-only baselines.

Baselines, on the same data (the KB's example tracebacks are the only "training" text):
  fuzz  rapidfuzz ratio of the whole pasted text against each entry's examples (best example wins)
  bm25  Okapi BM25 over one document per entry (its examples concatenated)
Run: python benchmarks/accuracy.py [CORPUS]   (default: ../shared/corpus/dev_tracebacks.yaml)
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path

from rapidfuzz import fuzz

from fixer.catalog import Catalog, load
from fixer.evaluate import Ranker, Score, evaluate, load_corpus
from fixer.match import Matcher
from fixer.parse import clean

ROOT = Path(__file__).resolve().parents[1]
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")


def fixer_ranker(catalog: Catalog) -> Ranker:
    matcher = Matcher(catalog)
    return lambda text: [m.id for m in matcher.explain(text).matches]


def fuzz_ranker(catalog: Catalog) -> Ranker:
    examples = [(entry.id, clean(ex.traceback)) for entry in catalog for ex in entry.examples]

    def rank(text: str) -> list[str]:
        query = clean(text)
        best: dict[str, float] = {}
        for entry_id, example in examples:
            best[entry_id] = max(best.get(entry_id, 0.0), fuzz.ratio(query, example))
        return sorted(best, key=lambda k: -best[k])

    return rank


def bm25_ranker(catalog: Catalog, k1: float = 1.5, b: float = 0.75) -> Ranker:
    docs = {entry.id: Counter(_tokens(" ".join(ex.traceback for ex in entry.examples))) for entry in catalog}
    lengths = {k: sum(v.values()) for k, v in docs.items()}
    average = sum(lengths.values()) / max(len(lengths), 1)
    frequency = Counter(token for doc in docs.values() for token in doc)
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}

    def rank(text: str) -> list[str]:
        query = set(_tokens(text))
        scores = {}
        for entry_id, doc in docs.items():
            norm = k1 * (1 - b + b * lengths[entry_id] / average)
            scores[entry_id] = sum(idf[t] * doc[t] * (k1 + 1) / (doc[t] + norm) for t in query if t in doc)
        return [k for k in sorted(scores, key=lambda k: -scores[k]) if scores[k] > 0]

    return rank


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def _row(name: str, score: Score) -> str:
    o = score.overall
    return f"| {name} | {o.n} | {o.top1_rate:.2f} | {o.top3_rate:.2f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared/corpus/dev_tracebacks.yaml")
    args = parser.parse_args()
    catalog = load()
    items = load_corpus(args.corpus)
    results = {
        "fixer": evaluate(fixer_ranker(catalog), items),
        "fuzz (whole text)": evaluate(fuzz_ranker(catalog), items),
        "bm25": evaluate(bm25_ranker(catalog), items),
    }
    print(f"corpus: {args.corpus} ({len(items)} items), KB: {len(catalog)} entries\n")
    print("| entry | n | fixer top-1 | fixer top-3 | fuzz top-1 | bm25 top-1 |")
    print("|---|---|---|---|---|---|")
    fixer, fuzzy, bm25 = results.values()
    for entry_id in sorted(fixer.per_entry):
        f, z, b = fixer.per_entry[entry_id], fuzzy.per_entry[entry_id], bm25.per_entry[entry_id]
        print(f"| {entry_id} | {f.n} | {f.top1_rate:.2f} | {f.top3_rate:.2f} | {z.top1_rate:.2f} | {b.top1_rate:.2f} |")
    print("\n| ranker | n | top-1 | top-3 |\n|---|---|---|---|")
    for name, score in results.items():
        print(_row(name, score))
    return 0


if __name__ == "__main__":
    sys.exit(main())
