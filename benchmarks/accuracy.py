"""Top-1/top-3 of fixer's matcher on a labelled corpus, per entry, against two text-only baselines.

Baselines, on the same data (the KB's example tracebacks are the only "training" text):
  fuzz  rapidfuzz ratio of the whole pasted text against each entry's examples (best example wins)
  bm25  Okapi BM25 over one document per entry (its examples concatenated)
Run: python benchmarks/accuracy.py [CORPUS...] [--per-entry]
(default: ../shared/corpus/dev_tracebacks.yaml, benchmarks/unseen/{tune,holdout}.yaml, the real pastes
from threads neither the KB nor the dev corpus quotes, and benchmarks/census/census.yaml, threads drawn by
library, backend and year, per half; overall and for those whose text decides the cause. A census thread
whose cause no entry has (`new:...`) cannot be ranked right: the census rows count the covered threads,
and a line per half says what share that is.)
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path

from rapidfuzz import fuzz

from fixer.explain.match import Matcher
from fixer.explain.parse import clean
from fixer.kb.catalog import Catalog, load
from fixer.kb.evaluate import NEW_CAUSE, Ranker, Score, evaluate, load_corpus

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


def _row(name: str, score: Score, empty: int | None = None) -> str:
    o = score.overall
    tail = f" {empty} |" if empty is not None else " |"
    return f"| {name} | {o.n} | {o.top1_rate:.2f} | {o.top3_rate:.2f} |{tail}"


CORPORA = {
    "dev corpus": ROOT.parent / "shared/corpus/dev_tracebacks.yaml",
    "unseen, tune half": ROOT / "benchmarks/unseen/tune.yaml",
    "unseen, holdout half": ROOT / "benchmarks/unseen/holdout.yaml",
    "census": ROOT / "benchmarks/census/census.yaml",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", type=Path, help="labelled corpora (default: dev and unseen ones)")
    parser.add_argument("--per-entry", action="store_true", help="also print top-1/top-3 per entry")
    args = parser.parse_args()
    catalog = load()
    rankers = {"fixer": fixer_ranker(catalog), "fuzz (whole text)": fuzz_ranker(catalog), "bm25": bm25_ranker(catalog)}
    corpora = {str(p): p for p in args.corpora} if args.corpora else {k: p for k, p in CORPORA.items() if p.exists()}
    print(f"KB: {len(catalog)} entries\n")
    print("| corpus, items | ranker | n | top-1 | top-3 | no candidate |\n|---|---|---|---|---|---|")
    coverage = []
    for name, path in corpora.items():
        items = load_corpus(path)
        parts = {"all": items}
        if any(item.half for item in items):
            parts = {}
            for half in sorted({item.half for item in items if item.half}, reverse=True):
                chosen = [item for item in items if item.half == half]
                covered = [item for item in chosen if not item.expect[0].startswith(NEW_CAUSE)]
                coverage.append(f"{name}, {half} half: {len(covered)} of {len(chosen)} threads' causes have an entry")
                parts[f"{half} half, covered"] = covered
                parts[f"{half} half, covered, decidable"] = [item for item in covered if item.decidable]
        elif any(item.decidable is not None for item in items):
            parts["decidable"] = [item for item in items if item.decidable]
        for part, chosen in parts.items():
            for ranker_name, rank in rankers.items():
                empty = sum(1 for item in chosen if not rank(item.text)) if ranker_name == "fixer" else None
                print(_row(f"{name}, {part} | {ranker_name}", evaluate(rank, chosen), empty))
        if args.per_entry:
            fixer = evaluate(rankers["fixer"], items)
            print(f"\n{name}, per entry:\n\n| entry | n | top-1 | top-3 |\n|---|---|---|---|")
            for entry_id, tally in sorted(fixer.per_entry.items()):
                print(f"| {entry_id} | {tally.n} | {tally.top1_rate:.2f} | {tally.top3_rate:.2f} |")
            print()
    for line in coverage:
        print(f"\n{line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
