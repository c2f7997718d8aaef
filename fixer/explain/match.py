"""Rank KB entries for one traceback: signatures, similarity to real examples, and evidence rules.

Each part adds points and a reason, so a match can always say why it ranked where it did (Sentry's
grouping shows which parts contributed; so do we). A bare "cuda:0 and cpu!" has many causes:
ranking is expected, and diagnostics or questions settle what the text cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rapidfuzz import fuzz

from fixer.explain import priors
from fixer.explain.evidence import Evidence, device_kind, extract
from fixer.explain.normalise import normalise
from fixer.explain.parse import Traceback, parse
from fixer.kb.catalog import Catalog
from fixer.kb.schema import Condition, Entry

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
    entry: Entry
    score: int
    reasons: tuple[Reason, ...]
    wording: int = 0  # the points of the message shape that admitted it: of two equal scores, the

    # entry whose own wording the message is (`for argument #3 'weight'`) goes first
    @property
    def id(self) -> str:
        return self.entry.id


@dataclass(frozen=True)
class Explanation:
    traceback: Traceback | None
    evidence: Evidence | None
    matches: list[Match]


@dataclass(frozen=True)
class _Signature:
    pattern: re.Pattern[str]
    exception: re.Pattern[str] | None
    weight: int

    def search(self, message: str, *, folded: bool) -> re.Match[str] | None:
        """`folded`: ignoring case, compiled on first need (re caches it), since few pastes need it."""
        return re.search(self.pattern.pattern, message, re.IGNORECASE) if folded else self.pattern.search(message)


@dataclass(frozen=True)
class _Rule:
    when: Condition
    compiled: dict[str, re.Pattern[str]]
    weight: int
    because: str


@dataclass(frozen=True)
class _Known:
    """A real example's message, normalised, with the kinds of devices it names."""

    message: str
    kinds: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class _CompiledEntry:
    entry: Entry
    signatures: tuple[_Signature, ...]
    rules: tuple[_Rule, ...]
    examples: tuple[_Known, ...]


_REGEX_FIELDS = ("message", "text", "exception", "argument", "op", "frame")


class Matcher:
    """Compiles a catalog once; `rank` is then a pure function of a traceback."""

    def __init__(self, catalog: Catalog, *, read_code: bool = True) -> None:
        """`read_code=False` ranks on the text alone, as the site's paste box does (it runs no detector)."""
        self.catalog = catalog
        self.read_code = read_code
        self._entries = tuple(self._compile(entry) for entry in catalog)
        self._priors = priors.load(catalog.root)
        self._arguments_spoken_of = tuple(
            rule.compiled["argument"] for c in self._entries for rule in c.rules if "argument" in rule.compiled
        )

    def _compile(self, entry: Entry) -> _CompiledEntry:
        signatures = tuple(
            _Signature(re.compile(s.pattern), re.compile(s.exception) if s.exception else None, s.weight)
            for s in entry.signatures
        )
        rules = tuple(
            _Rule(
                when=rule.when,
                compiled={
                    name: re.compile(value) for name in _REGEX_FIELDS if (value := getattr(rule.when, name)) is not None
                },
                weight=rule.weight,
                because=rule.because,
            )
            for rule in entry.evidence
        )
        examples = []
        for example in entry.examples:
            # The KB's examples are quoted as printed: no case folding (whose regex costs 20 ms to build).
            tb = parse(example.traceback, self.catalog.known_messages, fold_case=False)
            if tb and tb.message:
                kinds = extract(tb, read_code=False).device_kinds
                examples.append(_Known(normalise(tb.message), kinds, str(example.source)))
        return _CompiledEntry(entry, signatures, rules, tuple(examples))

    def explain(self, text: str, *, top: int | None = None) -> Explanation:
        tb = parse(text, self.catalog.known_messages)
        if tb is None:
            return Explanation(None, None, [])
        evidence = extract(tb, read_code=self.read_code)
        return Explanation(tb, evidence, self.rank(evidence, top=top))

    def rank(self, evidence: Evidence, *, top: int | None = None) -> list[Match]:
        if evidence.dtype_only:
            return []
        normalised = normalise(evidence.message) if evidence.message else ""
        closest = {c.entry.id: self._closest(c, normalised, evidence.device_kinds) for c in self._entries}
        # An argument that some entry's evidence speaks of is that evidence's to weigh; one that none does
        # says nothing, and the message's priors may then back off to the bare message's.
        unspoken = not any(rx.fullmatch(evidence.argument or "") for rx in self._arguments_spoken_of)
        counted = priors.lookup(self._priors, evidence.message, back_off=unspoken) if evidence.message else {}
        # A message typed again in another case is the same message: its signatures are sought ignoring
        # case when none shows as written, in any entry.
        signatures = {c.entry.id: self._best_signature(c, evidence, folded=False) for c in self._entries}
        if evidence.message and not any(signatures.values()):
            signatures = {c.entry.id: self._best_signature(c, evidence, folded=True) for c in self._entries}
        matches = [
            m
            for c in self._entries
            if (m := self._score(c, evidence, closest, signatures[c.entry.id], counted.get(c.entry.id)))
        ]
        matches = ranked(matches)
        return matches[:top] if top else matches

    def _score(
        self,
        compiled: _CompiledEntry,
        ev: Evidence,
        closest: dict[str, tuple[float, str] | None],
        signature: Reason | None,
        prior: priors.Prior | None,
    ) -> Match | None:
        reasons: list[Reason] = []
        similarity = _similarity(closest, compiled.entry.id)
        found = closest[compiled.entry.id]
        resembles = found is not None and found[0] >= RESEMBLANCE
        if signature:
            reasons.append(signature)
        if similarity:
            reasons.append(similarity)
        if prior is not None and prior.points:
            said = f"{prior.count} of {prior.total} real cases of this message alone had this cause"
            reasons.append(Reason(said, prior.points))
        rules = [Reason(_because(r, ev), r.weight) for r in compiled.rules if _holds(r, ev)]
        reasons.extend(rules)
        evidence_points = sum(r.points for r in rules)
        if not _competes(signature, resembles, evidence_points, has_message=bool(ev.message)):
            return None
        # Evidence reorders the candidates the message admits, and never removes one: a cause the
        # frames argue against stays in the list, last, rather than leaving the user with nothing.
        score = max(1, min(100, sum(r.points for r in reasons)))
        reasons.sort(key=lambda r: -abs(r.points))
        return Match(compiled.entry, score, tuple(reasons), signature.points if signature else 0)

    @staticmethod
    def _best_signature(compiled: _CompiledEntry, ev: Evidence, *, folded: bool) -> Reason | None:
        """The heaviest signature the message shows."""
        best: Reason | None = None
        for sig in compiled.signatures:
            if sig.exception and ev.exception and not sig.exception.fullmatch(ev.exception.rsplit(".", 1)[-1]):
                continue
            for message in ev.messages:
                hit = sig.search(message, folded=folded)
                if hit and (best is None or sig.weight > best.points):
                    best = Reason(f"the message says “{' '.join(hit.group(0).split())}”", sig.weight)
                    break
        return best

    @staticmethod
    def _closest(compiled: _CompiledEntry, normalised: str, kinds: tuple[str, ...]) -> tuple[float, str] | None:
        """The entry's real example closest to the message, among those naming the same kinds of
        devices: "cuda and cuda" and "cuda and cpu" read alike but point to different causes."""
        comparable = [k for k in compiled.examples if not (kinds and k.kinds) or k.kinds == kinds]
        if not normalised or not comparable:
            return None
        return max((fuzz.ratio(normalised, k.message), k.source) for k in comparable)


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


def _holds(rule: _Rule, ev: Evidence) -> bool:
    when, rx = rule.when, rule.compiled
    checks = (
        ("message", lambda: any(rx["message"].search(m) for m in ev.messages or ("",))),  # none: an empty one
        ("text", lambda: bool(rx["text"].search(ev.text))),
        (
            "exception",
            lambda: bool(ev.exception and rx["exception"].fullmatch(ev.exception.rsplit(".", 1)[-1])),
        ),
        ("argument", lambda: bool(ev.argument and rx["argument"].fullmatch(ev.argument))),
        ("op", lambda: bool(ev.op and rx["op"].search(ev.op))),
        ("devices", lambda: sorted(when.devices or ()) == sorted(device_kind(d) for d in ev.devices)),
        ("offending", lambda: ev.offending_kind == when.offending),
        ("library", lambda: any(_has_library(ev, lib) for lib in when.library or ())),
        ("frame", lambda: any(rx["frame"].search(line) for line in ev.frame_lines)),
        ("detector", lambda: when.detector in ev.facts),
    )
    return all(check() for name, check in checks if getattr(when, name) is not None)


def _because(rule: _Rule, ev: Evidence) -> str:
    """The rule's reason; a detector's adds the first place it found its fact, so the user can look."""
    found = ev.facts.get(rule.when.detector or "")
    return f"{rule.because} ({found[0]})" if found else rule.because


def _has_library(ev: Evidence, library: str) -> bool:
    return any(lib == library or lib.startswith(library + ".") for lib in ev.libraries)
