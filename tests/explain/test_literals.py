"""The literal prefilter never hides a match: on every line of every real traceback, each KB regex that
matches holds what `needs` says it needs, and the KB's signatures searched as one find what their
alternation finds."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT, corpus_items, kb_examples

from fixer.explain.literals import AnyOf, LiteralIndex, Regex, holds, needs
from fixer.kb.catalog import Catalog
from fixer.kb.index import REGEX_FIELDS

UNSEEN = [
    item
    for path in sorted((ROOT / "benchmarks" / "unseen").glob("*.yaml"))
    for item in yaml.safe_load(path.read_text())
]
TEXTS = [text for _, _, text in kb_examples()] + [i["traceback"] for i in corpus_items() + UNSEEN if i.get("traceback")]
LINES = sorted({line for text in TEXTS for line in text.split("\n")})


def _regexes(catalog: Catalog) -> list[str]:
    signatures = {s.pattern for entry in catalog for s in entry.signatures}
    rules = {v for entry in catalog for r in entry.evidence for f in REGEX_FIELDS if (v := getattr(r.when, f))}
    return sorted(signatures | rules)


def test_a_matching_line_always_holds_what_the_regex_needs(catalog):
    assert len(LINES) > 700
    missed = []
    for pattern in _regexes(catalog):
        needed = needs(pattern)
        for flags in (0, re.IGNORECASE):
            compiled = re.compile(pattern, flags)
            missed += [(pattern, line) for line in LINES if compiled.search(line) and not holds(needed, line.lower())]
    assert missed == []


def test_most_kb_regexes_need_a_literal(catalog):
    """Else the prefilter would spare little: every signature names words of its message."""
    regexes = _regexes(catalog)
    signatures = {s.pattern for entry in catalog for s in entry.signatures}
    assert all(needs(p) for p in signatures)
    assert sum(bool(needs(p)) for p in regexes) > 0.8 * len(regexes)


@pytest.mark.parametrize("ignore_case", [False, True])
def test_the_signatures_as_one_find_what_their_alternation_finds(catalog, ignore_case):
    known = catalog.known_messages
    alternation = re.compile(known.pattern, re.IGNORECASE if ignore_case else 0)
    differ = [
        line
        for line in LINES
        if ((a := alternation.search(line)) and a.span())
        != ((b := known.search(line, ignore_case=ignore_case)) and b.span())
    ]
    assert differ == []
    assert sum(bool(known.search(line)) for line in LINES) > 120


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"found at least two devices", (("found at least two devices",),)),
        (r"(?:cuda|mps):\d+ and cpu", ((" and cpu",), (":",), ("cuda", "mps"))),
        (r"Expected (?:object|tensor) of", ((" of",), ("expected ",), ("object", "tensor"))),
        (r"(?:wrapper_CUDA_\w+|index_select)", (("index_select", "wrapper_cuda_"),)),
        (r"(?:cuda)?:\d+", ((":",),)),
        # re's parser takes the `c` both branches start with out of them
        (r"(?:cpu|cuda:\d+) and (?:cpu|cuda)", ((" and c",), ("c",), ("pu", "uda"), ("pu", "uda:"))),
        (r"a*b?", ()),
        (r"(?i:FSDP) parameters", ((" parameters",), ("fsdp",))),
        (r"[unbalanced", ()),
    ],
)
def test_needs_names_every_run_of_literals_a_match_holds(pattern, expected):
    assert needs(pattern) == expected


def test_finditer_walks_matches_left_to_right():
    regexes = AnyOf([Regex.of(p) for p in (r"cuda:\d", r"cpu")])
    assert [m.group(0) for m in regexes.finditer("cuda:0 and cpu, then cuda:1")] == ["cuda:0", "cpu", "cuda:1"]


def test_an_index_offers_the_items_whose_rarest_set_a_text_holds_in_any_case():
    needed = [needs(p) for p in (r"found at least two devices", r"(?:cpu|cuda) and meta", r"\d+", r"to")]
    index = LiteralIndex.build(needed)
    assert index.candidates("found at least two devices, cpu and meta".lower()) == [0, 1, 2]
    assert index.candidates("moved TO cpu".lower()) == [2, 3]


def test_an_index_files_an_item_under_the_set_few_others_share():
    """A thousand entries that share a message and differ by one word each are told apart by that word."""
    needed = [needs(rf"Expected all tensors to be on the same device.* team{n:04}") for n in range(1000)]
    index = LiteralIndex.build(needed)
    text = "expected all tensors to be on the same device, but found two: team0417"
    assert index.candidates(text) == [417]


def test_holds_any_says_what_search_finds_on_every_line_of_the_kb_examples(catalog):
    known = catalog.known_messages
    lines = {line for _, _, text in kb_examples() for line in text.splitlines()}
    found = [line for line in lines if known.search(line)]
    assert found and len(found) < len(lines)  # both answers occur: the check can fail either way
    assert [line for line in lines if known.holds_any(line)] == found


def test_a_program_makes_the_regex_re_compiles_from_the_pattern(catalog):
    """`re.Pattern` equality compares the engine's code word for word: each KB regex made from its
    program is the one `re.compile` makes, and so matches as it does."""
    patterns = _regexes(catalog)
    made = {p: Regex.of(p) for p in patterns}
    assert all(regex.program is not None for regex in made.values())
    assert [p for p, regex in made.items() if regex.program.compiled(p) != re.compile(p)] == []


def test_a_program_keeps_the_names_of_its_groups():
    pattern = r"(?P<first>cuda|cpu):(?P<ordinal>\d+) and (?:cpu|meta)"
    regex = Regex.from_json(Regex.of(pattern).to_json())
    assert regex.compiled() == re.compile(pattern)
    assert regex.compiled().search("on cuda:1 and cpu").groupdict() == {"first": "cuda", "ordinal": "1"}


def test_a_program_not_of_its_pattern_is_refused_and_the_pattern_compiled():
    """A damaged index, or a program taken for another pattern, cannot make a wrong regex."""
    written = Regex.of(r"found at least two devices, (\w+:?\d*) and (\w+)").to_json()
    line = "found at least two devices, cuda:0 and cpu"
    written[3][2] = Regex.of(r"x+").program.code  # a valid program, of another pattern
    assert Regex.from_json(written).compiled().search(line).groups() == ("cuda:0", "cpu")
    code = written[3][2]
    written[3][2] = code[:-8] + ("AAAAAAAA" if code[-8:] != "AAAAAAAA" else "AQAAAAAA")  # the last code words
    assert Regex.from_json(written).compiled().search(line).groups() == ("cuda:0", "cpu")
    written[3][2] = "not base64!"
    assert Regex.from_json(written).compiled().search(line).groups() == ("cuda:0", "cpu")


def test_a_team_entrys_regex_keeps_no_program():
    """A team's regexes run under a time bound in the `regex` module, which takes no program of `re`'s."""
    regex = Regex.of(r"cuda:\d+ and cpu", owner="team/entry.yaml")
    assert regex.program is None
    assert Regex.from_json(regex.to_json()) == regex
