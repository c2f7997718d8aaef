"""Rank KB entries for one traceback: signatures, similarity to real examples, and evidence rules.

Each part adds points and a reason, so a match can always say why it ranked where it did (Sentry's
grouping shows which parts contributed; so do we). A bare "cuda:0 and cpu!" has many causes:
ranking is expected, and diagnostics or questions settle what the text cannot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from fixer import collector
from fixer.explain import literals, priors
from fixer.explain.evidence import Evidence, device_kind, extract
from fixer.explain.literals import Regex
from fixer.explain.normalise import normalise
from fixer.explain.parse import Traceback, parse
from fixer.explain.tolerant import HOLE, Wordings, readings
from fixer.kb.index import Card, Index, IndexedEntry, Outside, Question, Rule, build

if TYPE_CHECKING:
    from pathlib import Path

    from fixer.explain.narrow import Answer
    from fixer.kb.catalog import Catalog
    from fixer.kb.schema import Entry

SIMILARITY_POINTS = 25
SIMILARITY_FLOOR = 50.0  # below this, two messages are unrelated and similarity adds nothing
SIMILARITY_TIE = 2.0  # entries whose closest cases are this close to each other share the points
TOLERANCE_COST = 10  # a wording read through a cut or a typo is less certain than one read as printed
# A wording read with a word wrong or misspelt weighs no more than a PyTorch message the catalogue alone
# admits (fixer.kb.sources.SOURCE_WEIGHT): the word it lacks may be the one that made it specific.
INEXACT_CEILING = 25
RESEMBLANCE = 86.0  # a message this close to one of an entry's examples makes it a candidate
FRAMES_ALONE = 30  # a paste with frames but no message: the points its frames must make for an entry
NEAREST = 3  # a device message that nothing in the KB reads: how many of the nearest causes it is offered
NEAREST_POINTS = 10  # and at most how many points each: far below BEYOND, so the verdict stays "not in the KB"
_DEVICE_WORDS = re.compile(r"\b(?:cuda|cpu|gpu|mps|xpu|npu|hpu|xla|tpu|rocm|hip|devices?)\b")  # lower-cased text


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
    nearest: bool = False  # offered only as worded like its cases, where nothing in the KB read the message
    prevalence: int = 0  # the real cases counted behind any message that had this cause (kb/priors)

    @property
    def id(self) -> str:
        return self.card.id

    @property
    def entry(self) -> Entry:
        """The whole entry, read from its file on first need: a ranking alone shows only its card."""
        return self.card.entry

    def moved(self, reasons: Sequence[Reason]) -> Match:
        """The match with more reasons (an answer, a finding) and its score moved by their points. A score
        stays within 0-100, but a cause whose reasons sum below zero, one the text argues against, moves
        from that sum: what is said next must outweigh what ruled it out, not lift it from the floor."""
        start = min(self.score, sum(r.points for r in self.reasons))
        score = max(0, min(100, start + sum(r.points for r in reasons)))
        return replace(self, score=score, reasons=(*reasons, *self.reasons))


@dataclass(frozen=True)
class Explanation:
    traceback: Traceback | None
    evidence: Evidence | None
    matches: list[Match]
    slow: dict[str, str] = field(default_factory=dict)  # team entries skipped for time here: file -> the regex
    answers: tuple[Answer, ...] = ()  # the questions settled so far: by the user's project, then by the user
    questions: tuple[Question, ...] = ()  # what the KB can ask about the run, where the text leaves it open
    outside: Outside | None = None  # the message is PyTorch's or a library's, and no entry covers its cause yet

    @property
    def read(self) -> list[Match]:
        """The matches the KB's own reading admitted: the nearest causes offered for a device message that
        nothing reads are for the person to check, never ground to patch or to report a match."""
        return [m for m in self.matches if not m.nearest]


class Matcher:
    """Holds a KB's index; `rank` is then a pure function of a traceback."""

    def __init__(
        self,
        kb: Catalog | Index,
        *,
        read_code: bool = True,
        read_files: bool = True,
        project: Path | None = None,
        command: str | None = None,
    ) -> None:
        """`kb`: a loaded catalog, indexed here, or an index read from the cache (no entry validated, no
        regex compiled yet). `read_code=False` ranks on the text alone, as the site's paste box does;
        `read_files=False` reads the code the text shows but not the files it names (`fixer scan`: the
        logs come from other machines). `project`: the user's project, whose code answers the questions
        it can (`fixer.explain.project`) before a person is asked; `command`: the command line that
        started the failing run, where fixer saw it."""
        self.index = kb if isinstance(kb, Index) else build(kb)
        self.read_code, self.read_files = read_code, read_files
        self.known_messages = self.index.known
        self.project, self.command = project, command

    @collector.paused()  # an entry decoded from the index is kept for the next input
    def explain(self, text: str, *, top: int | None = None) -> Explanation:
        with literals.one_input() as reading:
            tb = parse(text, self.known_messages, tolerant=self._reads_tolerantly)
            evidence = extract(tb, read_code=self.read_code, read_files=self.read_files) if tb is not None else None
            matches = self.rank(evidence, top=top) if evidence is not None else []
        answers: tuple[Answer, ...] = ()
        if tb is not None and evidence is not None and matches:
            answers, matches = self._looked(matches, evidence, tb)
        outside = self._outside_of(evidence.message) if evidence is not None and evidence.message else None
        return Explanation(tb, evidence, matches, reading.skipped, answers, tuple(self.index.facts), outside)

    def _looked(
        self, matches: list[Match], evidence: Evidence, tb: Traceback
    ) -> tuple[tuple[Answer, ...], list[Match]]:
        """The answers the traceback, the command and the project give, and the ranking they make: a
        question the user's run, code or traceback settles is not one to ask them. A ranking the text
        already settles is left as it is: code or flags that can do something do not outweigh a traceback
        that shows what it did."""
        from fixer.explain.narrow import Answer, answer, settled
        from fixer.explain.project import absences, in_command, in_traceback, sightings

        if settled(matches):
            return (), matches
        facts = self.index.facts
        shown = in_traceback(evidence.messages, evidence.frame_lines, facts)
        seen: dict[str, str] = {}
        lacking: dict[str, str] = {}
        if self.project is not None:
            read = sightings(self.project, facts)
            seen = read.found
            lacking = absences(read, facts, self.project, (f.path for f in tb.all_frames))
        seen = {**seen, **(in_command(self.command, facts) if self.command else {})}
        answers = tuple(Answer(q, True, shown[q.fact], from_text=True) for q in facts if q.fact in shown)
        answers += tuple(Answer(q, True, seen[q.fact]) for q in facts if q.fact in seen and q.fact not in shown)
        # What the project lacks is said only of a fact some candidate speaks of: about the rest it moves nothing.
        spoken = {fact for m in matches for fact, _ in m.card.facts}
        answers += tuple(
            Answer(q, False, lacking[q.fact], recall=q.absent)
            for q in facts
            if q.fact in lacking and q.fact in spoken and q.fact not in shown and q.fact not in seen
        )
        for given in answers:
            matches = answer(matches, given)
        return answers, matches

    def rank(self, evidence: Evidence, *, top: int | None = None) -> list[Match]:
        if evidence.dtype_only:
            return []
        entries = self.index.entries
        normalised = normalise(evidence.message) if evidence.message else ""
        closest = self._closest(normalised, evidence.device_kinds)
        # An argument that some entry's evidence speaks of is that evidence's to weigh; one that none does
        # says nothing, and the message's priors may then back off to the bare message's.
        unspoken = not any(_found(rx, _present(evidence.argument), whole=True) for rx in self.index.arguments)
        counted = priors.lookup(self.index.priors, evidence.message, back_off=unspoken) if evidence.message else {}
        # Only the entries one of whose signatures the messages may show are searched; a message typed
        # again in another case is the same message, sought ignoring case when none shows as written.
        lowered = [m.lower() for m in evidence.messages]
        bearers = self.index.bearers
        bearing = sorted({e for low in lowered for p in self.known_messages.candidates(low) for e in bearers[p]})
        # PyTorch's own messages (fixer.kb.sources) speak only where no written signature reads the message.
        for source, folded in ((False, False), (False, True), (True, False), (True, True)):
            signatures = {
                n: _best_signature(entries[n], evidence, lowered, folded=folded, source=source) for n in bearing
            }
            if not evidence.message or any(signatures.values()):
                break
        else:
            # A message PyTorch prints as it is, whose cause the KB lacks, is not read as a near one.
            signatures = {} if self._outside_of(evidence.message) else self._tolerant_signatures(evidence.message)
        # A message admits the entries whose signature it shows or whose example it resembles; frames
        # alone are weighed against every entry.
        if evidence.message:
            resembling = {n for n, (ratio, _) in closest.items() if ratio >= RESEMBLANCE}
            # A cause the real cases show behind this very message competes, whatever its signatures say.
            behind = {n for n, entry_id in enumerate(self.index.ids) if entry_id in counted}
            shown = {n for n, found in signatures.items() if found}
            contenders: Iterable[int] = sorted(shown | resembling | behind)
        else:
            contenders = range(len(entries))
        matches = [
            m
            for n in contenders
            if (m := self._score(n, evidence, closest, signatures.get(n), counted.get(entries[n].card.id)))
        ]
        if not matches and evidence.message and self._unread_device_message(evidence.message):
            nearest = self._nearest(normalised, evidence.device_kinds)
            ids = self.index.ids
            found = (self._score(n, evidence, closest, reason, counted.get(ids[n])) for n, reason in nearest.items())
            matches = [replace(m, nearest=True) for m in found if m]
        matches = ranked(matches)
        return matches[:top] if top else matches

    def _unread_device_message(self, message: str) -> bool:
        """A message about devices that no signature, real case or count read, and that is not one of
        the extracted ones that the KB knows to be outside it."""
        return bool(_DEVICE_WORDS.search(message.lower())) and self._outside_of(message) is None

    def _nearest(self, normalised: str, kinds: tuple[str, ...]) -> dict[int, Reason]:
        """The causes whose real cases the wording of an unread device message is nearest to, a few points
        each: something to check and questions to ask, where an empty list would leave the person with
        nothing, while the verdict still says the KB may not hold the cause."""
        found = self._closest(normalised, kinds, cutoff=0.0)
        ids = self.index.ids
        best = sorted(found.items(), key=lambda item: (-item[1][0], ids[item[0]]))[:NEAREST]
        reasons = {}
        for number, (ratio, positions) in best:
            source = max(self.index.entries[number].examples[p].source for p in positions)
            said = f"nothing in the KB reads this message; it is {ratio:.0f}% like a case of this cause ({source})"
            reasons[number] = Reason(said, max(1, round(NEAREST_POINTS * ratio / 100)))
        return reasons

    def _score(
        self,
        number: int,
        ev: Evidence,
        closest: dict[int, tuple[float, tuple[int, ...]]],
        signature: Reason | None,
        prior: priors.Prior | None,
    ) -> Match | None:
        compiled = self.index.entries[number]
        reasons: list[Reason] = []
        similarity = _similarity(closest, number, compiled)
        found = closest.get(number)
        resembles = found is not None and found[0] >= RESEMBLANCE
        if signature:
            reasons.append(signature)
        if similarity:
            reasons.append(similarity)
        if prior is not None and prior.points:
            said = f"{prior.count} of {prior.total} real cases of this message alone had this cause"
            reasons.append(Reason(said, prior.points))
        # The message admits an entry by its wording, its resemblance to a real case, or the real cases
        # counted behind it; rules reorder what the message admits.
        admitted = bool(signature) or resembles or prior is not None
        if ev.message and not admitted:
            return None
        rules = [Reason(_because(r, ev), r.weight) for r in compiled.rules if _holds(r, ev)]
        reasons.extend(rules)
        evidence_points = sum(r.points for r in rules)
        if not _competes(admitted, evidence_points, has_message=bool(ev.message)):
            return None
        # Evidence reorders the candidates the message admits, and never removes one: a cause the
        # frames argue against stays in the list, last, rather than leaving the user with nothing.
        score = max(1, min(100, sum(r.points for r in reasons)))
        reasons.sort(key=lambda r: -abs(r.points))
        wording = signature.points if signature else 0
        prevalence = self._prevalence.get(compiled.card.id, 0)
        return Match(compiled.card, score, tuple(reasons), wording, prevalence=prevalence)

    @cached_property
    def _prevalence(self) -> dict[str, int]:
        """Each cause's real cases, over every counted message: what orders causes the text scores alike."""
        found: Counter[str] = Counter()
        for causes in self.index.priors.values():
            found.update({cause: prior.count for cause, prior in causes.items()})
        return dict(found)

    @cached_property
    def _wordings(self) -> Wordings:
        """Every known pattern's fixed words, in the order of `known_messages.regexes`."""
        found = self.index.readings
        return Wordings(found if found is not None else [readings(r.pattern) for r in self.known_messages.regexes])

    def _outside_of(self, message: str) -> Outside | None:
        lowered = message.lower()
        return next(
            (o for o in self.index.outside if o.pattern.may_match(lowered) and o.pattern.compiled().search(message)),
            None,
        )

    def _reads_tolerantly(self, line: str) -> bool:
        return bool(self._wordings.read(line))

    def _tolerant_signatures(self, message: str) -> dict[int, Reason | None]:
        """Where no signature reads a message as written: the entries of the wordings it reads as, cut
        or retyped (fixer.explain.tolerant), each at its signature's weight less `TOLERANCE_COST`, and
        no more than `INEXACT_CEILING` where a word was wrong or misspelt."""
        found: dict[int, Reason | None] = {}
        for read in self._wordings.read(message):
            number, alignment = read.number, read.alignment
            pattern = self.known_messages.regexes[number].pattern
            wording = " ".join("…" if w == HOLE else w for w in read.words)
            for n in self.index.bearers[number]:
                weight = next(s.weight for s in self.index.entries[n].signatures if s.pattern.pattern == pattern)
                points = max(1, weight - TOLERANCE_COST)
                if alignment.cost:
                    points = min(points, INEXACT_CEILING)
                earlier = found.get(n)
                if earlier is None or points > earlier.points:
                    found[n] = Reason(f"the message reads as “{wording}”, cut or retyped", points)
        return found

    def _closest(
        self, normalised: str, kinds: tuple[str, ...], cutoff: float = SIMILARITY_FLOOR - SIMILARITY_TIE
    ) -> dict[int, tuple[float, tuple[int, ...]]]:
        """Per entry, its real examples closest to the message (their ratio and positions), among those
        naming the same kinds of devices: "cuda and cuda" and "cuda and cpu" read alike but point to
        different causes. Every distinct example message is scored in one batch; an entry none of whose
        examples scores `cutoff` (by default, near enough to bear on `_similarity`) is left out."""
        if not normalised:
            return {}
        examples = self.index.examples
        found: dict[int, tuple[float, tuple[int, ...]]] = {}
        near = process.extract(
            normalised,
            examples.messages,
            scorer=fuzz.ratio,
            processor=None,
            limit=None,
            score_cutoff=cutoff,
        )
        for _, ratio, number in near:
            for entry, position, example_kinds in examples.of(number):
                if kinds and example_kinds and example_kinds != kinds:
                    continue
                best = found.get(entry)
                if best is None or ratio > best[0]:
                    found[entry] = (ratio, (position,))
                elif ratio == best[0]:
                    found[entry] = (ratio, (*best[1], position))
        return found


def _best_signature(
    compiled: IndexedEntry, ev: Evidence, lowered: list[str], *, folded: bool, source: bool
) -> Reason | None:
    """The heaviest signature of one kind (written, or PyTorch's own) the message shows; `lowered`: the
    messages in lower case."""
    best: Reason | None = None
    for sig in compiled.signatures:
        if sig.source != source:
            continue
        if sig.exception and ev.exception and not re.fullmatch(sig.exception, ev.exception.rsplit(".", 1)[-1]):
            continue
        pattern = sig.pattern
        for message, low in zip(ev.messages, lowered, strict=True):
            if not pattern.may_match(low):
                continue
            hit = pattern.compiled(ignore_case=folded).search(message)
            if hit and (best is None or sig.weight > best.points):
                best = Reason(f"the message says “{' '.join(hit.group(0).split())}”", sig.weight)
                break
    return best


def ranked(matches: Iterable[Match]) -> list[Match]:
    """Best first; of equal scores, the entry whose own wording admitted the message, then the cause behind
    more real cases, then by id. A bare message's twelve causes at 30 points each are then shown as users
    meet them, not in the alphabet's order, which put accelerate's hooks first."""
    return sorted(matches, key=lambda m: (-m.score, -m.wording, -m.prevalence, m.id))


def _similarity(
    closest: dict[int, tuple[float, tuple[int, ...]]], number: int, compiled: IndexedEntry
) -> Reason | None:
    """Points for looking like a known case of this entry and of no other: a bare "cuda:0 and cpu!"
    resembles the examples of a dozen causes (in one device order or the other) and so tells none of
    them apart; how often each is behind it is the priors' business."""
    found = closest.get(number)
    if found is None or found[0] <= SIMILARITY_FLOOR:
        return None
    ratio, positions = found
    bar = min(ratio - SIMILARITY_TIE, RESEMBLANCE)
    if any(other[0] >= bar for key, other in closest.items() if key != number):
        return None
    points = round(SIMILARITY_POINTS * (ratio - SIMILARITY_FLOOR) / (100 - SIMILARITY_FLOOR))
    if points <= 0:
        return None
    source = max(compiled.examples[p].source for p in positions)
    return Reason(f"the message is {ratio:.0f}% like a known case ({source})", points)


def _competes(admitted: bool, evidence_points: int, *, has_message: bool) -> bool:
    """An entry competes when the message admits it; for a paste with frames but no message, when the
    frames alone make a strong case."""
    return admitted or (not has_message and evidence_points >= FRAMES_ALONE)


def _holds(rule: Rule, ev: Evidence) -> bool:
    """Every condition of the rule, in the order written, the first that fails ending the check: a
    paste is checked against each rule of each entry it may be, tens of thousands in a team's KB."""
    when = rule.when
    return all(_CONDITIONS[name](when[name], ev) for name in when)


def _exception(ev: Evidence) -> tuple[str, ...]:
    return _present(ev.exception.rsplit(".", 1)[-1] if ev.exception else None)


_CONDITIONS: dict[str, Callable[[Any, Evidence], bool]] = {
    "message": lambda rx, ev: _found(rx, ev.messages or ("",)),  # none: an empty one
    "text": lambda rx, ev: _found(rx, (ev.text,)),
    "exception": lambda rx, ev: _found(rx, _exception(ev), whole=True),
    "argument": lambda rx, ev: _found(rx, _present(ev.argument), whole=True),
    "op": lambda rx, ev: _found(rx, _present(ev.op)),
    "devices": lambda kinds, ev: sorted(kinds) == sorted(device_kind(d) for d in ev.devices),
    "offending": lambda kind, ev: ev.offending_kind == kind,
    "library": lambda libraries, ev: any(_has_library(ev, lib) for lib in libraries),
    "frame": lambda rx, ev: rx.may_match(ev.frames_lowered) and _found(rx, ev.frame_lines),
    "detector": lambda detector, ev: detector in ev.facts,
}


def _found(regex: Regex, texts: Iterable[str], *, whole: bool = False) -> bool:
    """Each text is tried only if it holds what the regex needs: most rules never compile theirs."""
    texts = [t for t in texts if regex.may_match(t.lower())]
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
