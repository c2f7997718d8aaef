"""`fixer kb lint`: the checks that keep the KB one trustworthy source (rustc's tidy, for entries)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fixer.diagnose.probes import PROBES
from fixer.explain import detectors
from fixer.explain.literals import BOUND_S, needs, runs_out
from fixer.explain.match import Matcher
from fixer.explain.narrow import first, interview, settled, within_reach
from fixer.explain.parse import MAX_MESSAGE_CHARS
from fixer.kb.catalog import FACTS, Catalog, KBError, clash, read_entry, read_facts, shown
from fixer.kb.chances import CHANCES
from fixer.kb.index import REGEX_FIELDS, Question
from fixer.kb.repro import Verification, verification
from fixer.kb.schema import Entry, Fact, SourceMessage
from fixer.kb.sources import MESSAGES, read_sources
from fixer.kb.unwritten import unwritten
from fixer.patching import registry


@dataclass(frozen=True)
class Problem:
    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass(frozen=True)
class EntryStats:
    id: str
    examples: int
    ambiguous: int
    repro: Verification
    signatures: int
    rules: int
    pytorch_messages: int  # of PyTorch's own (kb/messages/pytorch.yaml), how many name this cause
    library_messages: int  # of the other libraries' (kb/messages/<library>.yaml), how many name it


def entry_stats(entry: Entry, sources: Sequence[SourceMessage] = ()) -> EntryStats:
    return EntryStats(
        id=entry.id,
        examples=len(entry.examples),
        ambiguous=sum(e.ambiguous for e in entry.examples),
        repro=verification(entry),
        signatures=len(entry.signatures),
        rules=len(entry.evidence),
        pytorch_messages=sum(entry.id in m.entries for m in sources if m.library == "pytorch"),
        library_messages=sum(entry.id in m.entries for m in sources if m.library != "pytorch"),
    )


def lint(root: Path, team: Sequence[Path] = ()) -> tuple[list[Entry], list[Problem]]:
    """The built-in KB and the team directories, merged as `load` merges them, so a team entry is
    checked against the entries it sits beside: its related ids, and whether it takes their examples."""
    merged: dict[str, Entry] = {}
    files: dict[str, Path] = {}
    problems: list[Problem] = []
    facts: dict[str, Fact] = {}
    for directory in (root, *team):
        try:
            facts.update(read_facts(directory / FACTS))
        except KBError as exc:
            problems.append(Problem(shown(directory / FACTS, root), str(exc).removeprefix(f"{FACTS.name}: ")))
        paths = sorted(directory.glob("*.yaml")) if directory.is_dir() else []
        if not paths:
            problems.append(Problem(str(directory), "no *.yaml entries" if directory.is_dir() else "not a directory"))
        for path in paths:
            name = shown(path, root)
            try:
                entry = read_entry(path)
            except KBError as exc:
                problems.append(Problem(name, str(exc).removeprefix(f"{path.name}: ")))
                continue
            if entry.id != path.stem:
                problems.append(Problem(name, f"id {entry.id!r} differs from the file name"))
            refused = clash(entry, path, files)
            if refused:
                problems.append(Problem(name, refused))
                continue
            if entry.overrides and entry.id not in files:
                problems.append(Problem(name, f"says `overrides: true`, but no entry before it has id {entry.id!r}"))
            merged[entry.id] = entry
            files[entry.id] = path
    entries = list(merged.values())
    names = {entry_id: shown(path, root) for entry_id, path in files.items()}
    sources: tuple[SourceMessage, ...] = ()
    try:
        sources = _sources(root)
    except KBError as exc:
        file, _, unread = str(exc).partition(": ")
        problems.append(Problem(file, unread))
    problems.extend(_cross_checks(entries, root, names, files, facts, sources))
    problems.extend(_slow_team_regexes(entries, root, names, files))
    problems.extend(_unknown_causes_of_sources(sources, merged.keys()))
    return entries, problems


def _sources(root: Path) -> tuple[SourceMessage, ...]:
    from fixer.kb.catalog import _read_document

    return read_sources(root / MESSAGES, _read_document)


def _unknown_causes_of_sources(sources: Sequence[SourceMessage], ids: Iterable[str]) -> list[Problem]:
    """The extracted messages may only name causes the KB has: a renamed or retired entry leaves them
    pointing nowhere, and the message would then admit nothing."""
    known = set(ids)
    return [
        Problem(
            str(MESSAGES / f"{message.library}.yaml"),
            f"{message.key!r} names {', '.join(sorted(missing))}, which no entry is",
        )
        for message in sources
        if (missing := set(message.entries) - known)
    ]


# Text made to make a regex work hard, each as long as the longest message fixer reads: long runs of
# what repeats match (letters, spaces, word-and-space, digits, separators), the start of a known message
# over and over, near misses that fail at their very end, and runs of the regex's own literals.
_HARD_UNITS = (
    "a", " ", "word ", "0", "/", ":", "(", "cuda:0 ", "\t\n", "ab", ",",
    "Expected all tensors to be on the same device, ", "but found at least two devices, cuda:0 and ",
    "wrapper_CUDA_", "torch.cuda.FloatTensor ", "'x' ",
)  # fmt: skip


def hard_texts(pattern: str) -> list[str]:
    units = dict.fromkeys((*_HARD_UNITS, *(s for alternatives in needs(pattern) for s in alternatives)))
    return [(unit * (MAX_MESSAGE_CHARS // len(unit) + 1))[:MAX_MESSAGE_CHARS] + "\x00" for unit in units if unit]


def _slow_team_regexes(
    entries: list[Entry], root: Path, names: dict[str, str], files: dict[str, Path]
) -> list[Problem]:
    """A team entry whose regex would run out of its time bound on hard text: at run time it would be
    skipped, so the lint says so first. The built-in KB's regexes are held to this by its own tests."""
    problems = []
    for entry in entries:
        if files[entry.id].parent == root:
            continue
        rules = (getattr(rule.when, name) for rule in entry.evidence for name in REGEX_FIELDS)
        for pattern in dict.fromkeys(p for p in (*(s.pattern for s in entry.signatures), *rules) if p):
            if runs_out(pattern, hard_texts(pattern)):
                problems.append(
                    Problem(
                        names[entry.id],
                        f"the regex {pattern!r} takes over {BOUND_S} s on text made to make it work hard, so "
                        "fixer would skip this entry; write it without runs of .* that can match the same text",
                    )
                )
    return problems


def _cross_checks(
    entries: list[Entry],
    root: Path,
    names: dict[str, str],
    files: dict[str, Path],
    facts: dict[str, Fact],
    sources: Sequence[SourceMessage],
) -> list[Problem]:
    """Checks of each entry against the others and the questions; `names` says which file to blame."""
    problems: list[Problem] = []
    known = {e.id for e in entries}
    for entry in entries:
        file = names[entry.id]
        for related in entry.related:
            if related not in known:
                problems.append(Problem(file, f"related entry {related!r} does not exist"))
        problems.extend(
            Problem(file, f"diagnostics names {probe!r}, which no probe in fixer/diagnose/probes.py is")
            for probe in entry.diagnostics
            if probe not in PROBES
        )
        problems.extend(
            Problem(file, f"an evidence rule names the detector {rule.when.detector!r}, unknown to fixer/explain/")
            for rule in entry.evidence
            if rule.when.detector is not None and rule.when.detector not in detectors.registered()
        )
        problems.extend(
            Problem(file, f"facts names {fact!r}, which no question in {FACTS} asks about")
            for fact in entry.facts
            if fact not in facts
        )
        if entry.fix.before.strip() == entry.fix.after.strip():
            problems.append(Problem(file, "fix.before and fix.after are the same code"))
        if entry.repro and entry.repro.code.strip() == entry.repro.fixed.strip():
            problems.append(Problem(file, "repro.code and repro.fixed are the same code"))
        problems.extend(Problem(file, message) for message in _codemod_problems(entry))
        problems.extend(Problem(file, message) for message in unwritten(entry))
    problems.extend(_shared_wordings_weigh_alike(entries, names))
    problems.extend(_examples_rank_first(entries, root, names, files, facts, sources))
    return problems


def _codemod_problems(entry: Entry) -> list[str]:
    """The codemod an entry names exists; no codemod means manual, and the entry says why there is none.
    Each patch judges its own safety."""
    codemod_id, safety = entry.fix.codemod, entry.fix.safety
    if codemod_id is None:
        if safety != "manual":
            return [f"fix.safety is {safety!r} but no codemod applies it: use 'manual'"]
        return (
            [] if entry.fix.manual_because else ["fix.manual_because is missing: say why no codemod applies this fix"]
        )
    if entry.fix.manual_because is not None:
        return ["fix.manual_because is set, but the fix has a codemod"]
    if codemod_id not in registry.CODEMODS:
        return [f"fix.codemod {codemod_id!r} does not exist in fixer/patching/codemods"]
    if safety == "manual":
        return [f"fix.safety is 'manual' but the {codemod_id} codemod applies it: say 'safe' or 'unsafe'"]
    return []


def _shared_wordings_weigh_alike(entries: list[Entry], names: dict[str, str]) -> list[Problem]:
    """A wording several entries share is no evidence for one of them over another: it gives each the
    same points, and how often each cause is behind it is the priors' business (kb/priors/)."""
    weights: dict[tuple[str, str | None], dict[int, list[str]]] = {}
    for entry in entries:
        for signature in entry.signatures:
            by_weight = weights.setdefault((signature.pattern, signature.exception), {})
            by_weight.setdefault(signature.weight, []).append(entry.id)
    return [
        Problem(
            names[sorted(ids for ids in by_weight.values())[0][0]],
            f"the signature {pattern!r} weighs "
            + ", ".join(f"{w} in {', '.join(ids)}" for w, ids in sorted(by_weight.items()))
            + "; a shared wording weighs the same in every entry",
        )
        for (pattern, _), by_weight in weights.items()
        if len(by_weight) > 1
    ]


def _examples_rank_first(
    entries: list[Entry],
    root: Path,
    names: dict[str, str],
    files: dict[str, Path],
    facts: dict[str, Fact],
    sources: Sequence[SourceMessage],
) -> list[Problem]:
    """Each real example puts its own entry first: the KB's regression test. An example whose text
    cannot decide (`ambiguous`) may rank lower, as its priors say, but must stay within reach of the
    follow-up questions; and where the text leaves the ranking open, answering every question that could
    still change the first place as the entry's own `facts` say must bring it first: each cause is
    reachable by some sequence of answers."""
    live = {e.id: e for e in entries if not e.retired}
    catalog = Catalog(
        entries=live,
        root=root,
        files={entry_id: files[entry_id] for entry_id in live},
        facts=facts,
        sources=tuple(sources),  # ranked as `fixer explain` ranks, with the extracted messages
    )
    matcher = Matcher(catalog)
    problems = []
    for entry in live.values():
        for number, example in enumerate(entry.examples, 1):
            result = matcher.explain(example.traceback)
            matches = result.matches
            ranked = [m.id for m in matches]
            where = f"example {number} ({example.source})"
            if not (ranked[:1] == [entry.id] or (example.ambiguous and within_reach(matches, entry.id))):
                got = ", ".join(ranked[:3]) or "nothing"
                place = "in the top 3 or among the close causes" if example.ambiguous else "first"
                problems.append(Problem(names[entry.id], f"{where} is not {place}: {got}"))
            elif not settled(matches):
                found = interview(matches, result.questions, partial(_as_cause_says, entry), limit=len(facts), worth=0)
                if first(found.matches) != entry.id:
                    got = ", ".join(m.id for m in found.matches[:3]) or "nothing"
                    problems.append(
                        Problem(names[entry.id], f"{where}: answering as this entry's facts say still ranks {got}")
                    )
    return problems


def _as_cause_says(entry: Entry, question: Question) -> bool | None:
    """The answer a person whose run had this cause would give: what the entry says is likely."""
    likelihood = entry.facts.get(question.fact)
    return None if likelihood is None else CHANCES[likelihood] >= 0.5
