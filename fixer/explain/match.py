"""Rank KB entries for one traceback: signatures, similarity to real examples, and evidence rules.

Each part adds points and a reason, so a match can always say why it ranked where it did (Sentry's
grouping shows which parts contributed; so do we). A bare "cuda:0 and cpu!" has many causes:
ranking is expected, and diagnostics or questions settle what the text cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rapidfuzz import fuzz

from fixer.explain import priors
from fixer.explain.evidence import Evidence, device_kind, extract
from fixer.explain.literals import Literals, Regex
from fixer.explain.normalise import normalise
from fixer.explain.parse import Traceback, parse
from fixer.kb.index import Card, Index, IndexedEntry, Rule, build

if TYPE_CHECKING:
    from fixer.kb.catalog import Catalog
    from fixer.kb.schema import Entry

SIMILARITY_POINTS = 25
SIMILARITY_FLOOR = 50.0  # below this, two messages are unrelated and similarity adds nothing
SIMILARITY_TIE = 2.0  # entries whose closest cases are this close to each other share the points
RESEMBLANCE = 86.0  # a message this close to one of an entry's examples makes it a candidate
FRAMES_ALONE = 30  # a paste with frames but no message: the points its frames must make for an entry


@dataclass(frozen=True)
class Reason:
    text: str
    points: int


@dataclass(frozen=True)
class Match:
    card: Card
    score: int
    reasons: tuple[Reason, ...]
    wording: int = 0  # the points of the message shape that admitted it: of two equal scores, the

    # entry whose own wording the message is (`for argument #3 'weight'`) goes first
    @property
    def id(self) -> str:
        return self.card.id

    @property
    def entry(self) -> Entry:
        """The whole entry, read from its file on first need: a ranking alone shows only its card."""
        return self.card.entry


@dataclass(frozen=True)
class Explanation:
    traceback: Traceback | None
    evidence: Evidence | None
    matches: list[Match]


class Matcher:
    """Holds a KB's index; `rank` is then a pure function of a traceback."""

    def __init__(self, kb: Catalog | Index, *, read_code: bool = True) -> None:
        """`kb`: a loaded catalog, indexed here, or an index read from the cache (no entry validated, no
        regex compiled yet). `read_code=False` ranks on the text alone, as the site's paste box does."""
        index = kb if isinstance(kb, Index) else build(kb)
        self.index = index
        self.read_code = read_code
        self.known_messages = index.known
        self._entries = index.entries
        self._priors = index.priors
        self._arguments_spoken_of = tuple(
            rule.when["argument"] for c in self._entries for rule in c.rules if "argument" in rule.when
        )
        self._literals = Literals.of(n for c in self._entries for sig in c.signatures for n in sig.pattern.needs)

    def explain(self, text: str, *, top: int | None = None) -> Explanation:
        tb = parse(text, self.known_messages)
        if tb is None:
            return Explanation(None, None, [])
        evidence = extract(tb, read_code=self.read_code)
        return Explanation(tb, evidence, self.rank(evidence, top=top))

    def rank(self, evidence: Evidence, *, top: int | None = None) -> list[Match]:
        if evidence.dtype_only:
            return []
        normalised = normalise(evidence.message) if evidence.message else ""
        closest = {c.card.id: self._closest(c, normalised, evidence.device_kinds) for c in self._entries}
        # An argument that some entry's evidence speaks of is that evidence's to weigh; one that none does
        # says nothing, and the message's priors may then back off to the bare message's.
        unspoken = not any(_found(rx, _present(evidence.argument), whole=True) for rx in self._arguments_spoken_of)
        counted = priors.lookup(self._priors, evidence.message, back_off=unspoken) if evidence.message else {}
        # A message typed again in another case is the same message: its signatures are sought ignoring
        # case when none shows as written, in any entry.
        held = set().union(*(self._literals.held_by(m) for m in evidence.messages))
        signatures = {c.card.id: _best_signature(c, evidence, held, folded=False) for c in self._entries}
        if evidence.message and not any(signatures.values()):
            signatures = {c.card.id: _best_signature(c, evidence, held, folded=True) for c in self._entries}
        matches = [
            m
            for c in self._entries
            if (m := self._score(c, evidence, closest, signatures[c.card.id], counted.get(c.card.id)))
        ]
        matches = ranked(matches)
        return matches[:top] if top else matches

    def _score(
        self,
        compiled: IndexedEntry,
        ev: Evidence,
        closest: dict[str, tuple[float, str] | None],
        signature: Reason | None,
        prior: priors.Prior | None,
    ) -> Match | None:
        reasons: list[Reason] = []
        similarity = _similarity(closest, compiled.card.id)
        found = closest[compiled.card.id]
        resembles = found is not None and found[0] >= RESEMBLANCE
        if signature:
            reasons.append(signature)
        if similarity:
            reasons.append(similarity)
        if prior is not None and prior.points:
            said = f"{prior.count} of {prior.total} real cases of this message alone had this cause"
            reasons.append(Reason(said, prior.points))
        if ev.message and not (signature or resembles):  # rules reorder what the message admits
            return None
        rules = [Reason(_because(r, ev), r.weight) for r in compiled.rules if _holds(r, ev)]
        reasons.extend(rules)
        evidence_points = sum(r.points for r in rules)
        if not _competes(signature, resembles, evidence_points, has_message=bool(ev.message)):
            return None
        # Evidence reorders the candidates the message admits, and never removes one: a cause the
        # frames argue against stays in the list, last, rather than leaving the user with nothing.
        score = max(1, min(100, sum(r.points for r in reasons)))
        reasons.sort(key=lambda r: -abs(r.points))
        return Match(compiled.card, score, tuple(reasons), signature.points if signature else 0)

    @staticmethod
    def _closest(compiled: IndexedEntry, normalised: str, kinds: tuple[str, ...]) -> tuple[float, str] | None:
        """The entry's real example closest to the message, among those naming the same kinds of
        devices: "cuda and cuda" and "cuda and cpu" read alike but point to different causes."""
        comparable = [k for k in compiled.examples if not (kinds and k.kinds) or k.kinds == kinds]
        if not normalised or not comparable:
            return None
        return max((fuzz.ratio(normalised, k.message), k.source) for k in comparable)


def _best_signature(compiled: IndexedEntry, ev: Evidence, held: set[str], *, folded: bool) -> Reason | None:
    """The heaviest signature the message shows; `held`: the KB's literals the messages hold."""
    best: Reason | None = None
    for sig in compiled.signatures:
        if not sig.pattern.may_match(held):
            continue
        if sig.exception and ev.exception and not re.fullmatch(sig.exception, ev.exception.rsplit(".", 1)[-1]):
            continue
        pattern = sig.pattern.compiled(ignore_case=folded)
        for message in ev.messages:
            hit = pattern.search(message)
            if hit and (best is None or sig.weight > best.points):
                best = Reason(f"the message says “{' '.join(hit.group(0).split())}”", sig.weight)
                break
    return best


def ranked(matches: Iterable[Match]) -> list[Match]:
    """Best first; of equal scores, the entry whose own wording admitted the message, then by id."""
    return sorted(matches, key=lambda m: (-m.score, -m.wording, m.id))


def _similarity(closest: dict[str, tuple[float, str] | None], entry_id: str) -> Reason | None:
    """Points for looking like a known case of this entry and of no other: a bare "cuda:0 and cpu!"
    resembles the examples of a dozen causes (in one device order or the other) and so tells none of
    them apart; how often each is behind it is the priors' business."""
    found = closest[entry_id]
    if found is None or found[0] <= SIMILARITY_FLOOR:
        return None
    ratio, source = found
    bar = min(ratio - SIMILARITY_TIE, RESEMBLANCE)
    if any(other and other[0] >= bar for key, other in closest.items() if key != entry_id):
        return None
    points = round(SIMILARITY_POINTS * (ratio - SIMILARITY_FLOOR) / (100 - SIMILARITY_FLOOR))
    if points <= 0:
        return None
    return Reason(f"the message is {ratio:.0f}% like a known case ({source})", points)


def _competes(signature: Reason | None, resembles: bool, evidence_points: int, *, has_message: bool) -> bool:
    """An entry competes when its message shape matches or the message closely resembles one of its
    real examples; for a paste with frames but no message, when the frames alone make a strong case."""
    if signature or resembles:
        return True
    return not has_message and evidence_points >= FRAMES_ALONE


def _holds(rule: Rule, ev: Evidence) -> bool:
    when = rule.when
    exception = ev.exception.rsplit(".", 1)[-1] if ev.exception else None
    checks = {
        "message": lambda: _found(when["message"], ev.messages or ("",)),  # none: an empty one
        "text": lambda: _found(when["text"], (ev.text,)),
        "exception": lambda: _found(when["exception"], _present(exception), whole=True),
        "argument": lambda: _found(when["argument"], _present(ev.argument), whole=True),
        "op": lambda: _found(when["op"], _present(ev.op)),
        "devices": lambda: sorted(when["devices"]) == sorted(device_kind(d) for d in ev.devices),
        "offending": lambda: ev.offending_kind == when["offending"],
        "library": lambda: any(_has_library(ev, lib) for lib in when["library"]),
        "frame": lambda: _found(when["frame"], ev.frame_lines),
        "detector": lambda: when["detector"] in ev.facts,
    }
    return all(checks[name]() for name in when)


def _found(regex: Regex, texts: Iterable[str], *, whole: bool = False) -> bool:
    """Each text is tried only if it holds a literal the regex needs: most rules never compile theirs."""
    texts = [t for t in texts if not regex.needs or any(n in t.lower() for n in regex.needs)]
    compiled = regex.compiled() if texts else None
    return compiled is not None and any(compiled.fullmatch(t) if whole else compiled.search(t) for t in texts)


def _present(value: str | None) -> tuple[str, ...]:
    return (value,) if value else ()


def _because(rule: Rule, ev: Evidence) -> str:
    """The rule's reason; a detector's adds the first place it found its fact, so the user can look."""
    found = ev.facts.get(rule.when.get("detector", ""))
    return f"{rule.because} ({found[0]})" if found else rule.because


def _has_library(ev: Evidence, library: str) -> bool:
    return any(lib == library or lib.startswith(library + ".") for lib in ev.libraries)
