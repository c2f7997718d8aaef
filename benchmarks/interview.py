"""fixer's follow-up questions against a simulated user, on real pastes that their text cannot decide.

Each item is a real paste with the facts of its reporter's situation, written from its thread in the
vocabulary of benchmarks/interview/facts.yaml (fixed before the questions were written). The simulated
user answers each question fixer asks from those facts, and "don't know" where the thread does not
settle the fact or no fact of the vocabulary is asked about. fixer reads no project here: the pastes come
from other people's machines.

Reports top-1/top-3 before any question and after at most LIMIT questions, and the questions asked.
After the questions, a ranking that leaves no known cause ahead of one the KB does not hold counts as
no answer at all (fixer then says "probably not in the KB").

Run: python benchmarks/interview.py [ITEMS...] [--limit N] [--verbose]
(default: benchmarks/interview/tune.yaml and benchmarks/interview/holdout.yaml)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from fixer.explain import narrow
from fixer.explain.match import Matcher
from fixer.kb.catalog import load
from fixer.kb.index import Question

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [ROOT / "benchmarks/interview/tune.yaml", ROOT / "benchmarks/interview/holdout.yaml"]
VOCABULARY = ROOT / "benchmarks/interview/facts.yaml"


@dataclass(frozen=True)
class Outcome:
    item: str
    expect: str
    before: list[str]
    after: list[str]
    asked: list[tuple[str, bool | None]]


def read_items(path: Path, vocabulary: set[str]) -> list[dict[str, object]]:
    items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    for item in items:
        unknown = set(item.get("facts") or {}) - vocabulary
        if unknown:
            raise SystemExit(f"{path}: {item['id']}: facts outside the vocabulary: {', '.join(sorted(unknown))}")
    return items


def _reply(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    return {"yes": True, "no": False}.get(str(value).lower())


def interview(matcher: Matcher, item: dict[str, object], limit: int) -> Outcome:
    facts = {str(k): _reply(v) for k, v in dict(item.get("facts") or {}).items()}  # type: ignore[call-overload]
    result = matcher.explain(str(item["traceback"]))
    asked: list[tuple[str, bool | None]] = []

    def ask(question: Question) -> bool | None:
        reply = facts.get(question.fact)
        asked.append((question.fact, reply))
        return reply

    found = narrow.interview(result.matches, result.questions, ask, limit=limit, answered=result.answers)
    after = [m.id for m in found.matches] if narrow.first(found.matches) is not None else []
    return Outcome(str(item["id"]), str(item["expect"]), [m.id for m in result.matches], after, asked)


def _rates(outcomes: list[Outcome], field: str) -> tuple[float, float]:
    n = max(len(outcomes), 1)
    ranked = [getattr(o, field) for o in outcomes]
    return (
        sum(r[:1] == [o.expect] for r, o in zip(ranked, outcomes, strict=True)) / n,
        sum(o.expect in r[:3] for r, o in zip(ranked, outcomes, strict=True)) / n,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("items", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--limit", type=int, default=3, help="questions at most (default 3)")
    parser.add_argument("--verbose", action="store_true", help="each item's questions, answers and rankings")
    args = parser.parse_args(argv)
    vocabulary = set(yaml.safe_load(VOCABULARY.read_text(encoding="utf-8")))
    matcher = Matcher(load(ROOT / "kb"))
    print("| items | n | before top-1 | before top-3 | after top-1 | after top-3 | questions per paste |")
    print("|---|---|---|---|---|---|---|")
    for path in args.items:
        if not path.exists():
            print(f"{path}: not there", file=sys.stderr)
            continue
        outcomes = [interview(matcher, item, args.limit) for item in read_items(path, vocabulary)]
        b1, b3 = _rates(outcomes, "before")
        a1, a3 = _rates(outcomes, "after")
        asked = sum(len(o.asked) for o in outcomes) / max(len(outcomes), 1)
        print(f"| {path.name} | {len(outcomes)} | {b1:.2f} | {b3:.2f} | {a1:.2f} | {a3:.2f} | {asked:.1f} |")
        if args.verbose:
            for o in outcomes:
                mark = "ok " if o.after[:1] == [o.expect] else "   "
                said = ", ".join(f"{f}={'?' if r is None else 'yes' if r else 'no'}" for f, r in o.asked)
                shown = f"before {o.before[:3]}; asked [{said}]; after {o.after[:3]}"
                print(f"  {mark}{o.item}: expect {o.expect}; {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
