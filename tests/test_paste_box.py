"""The site's paste-your-traceback box ranks like `fixer explain`: the JavaScript port of the matcher
(docs/javascripts/fixer-match.js, fed by fixer/output/export.py) is run under Node on every KB example
(also word-wrapped at 60 and 80 columns), every dev-corpus traceback, every paste of the unseen tune
half and of the census's tune half (cut and retyped messages among them), and must rank exactly as
`fixer explain` does on the text alone: the detectors, which read the code a traceback shows, are
Python and run only in `fixer`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CORPUS, ROOT, kb_examples
from pastes import AFTER_A_CRASH, LONG_LINES, rich_boxes, rich_traceback, word_wrapped

from fixer.explain.match import Matcher
from fixer.explain.narrow import interview, settled
from fixer.explain.parse import parse
from fixer.kb.catalog import Catalog
from fixer.output.export import UntranslatableRegex, matcher_data, to_js

JS = ROOT / "docs" / "javascripts"
TUNE = ROOT / "benchmarks" / "unseen" / "tune.yaml"
CENSUS = ROOT / "benchmarks" / "census" / "census.yaml"
REALCODE = ROOT / "benchmarks" / "realcode" / "threads.yaml"
NODE = shutil.which("node")

# Loads the port, explains every case, prints [[first id or null, [[id, score], ...]], ...].
RUNNER = """
import { readFileSync } from "node:fs";
import { explain } from "./fixer-match.mjs";
const { data, texts } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = texts.map((text) => explain(data, text).matches.map((m) => [m.id, m.score]));
process.stdout.write(JSON.stringify(out));
"""
# Loads the port, parses every case, prints [[[path, line, function], ...] or null, ...].
FRAMES_RUNNER = """
import { readFileSync } from "node:fs";
import { parse } from "./fixer-match.mjs";
const { data, texts } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = texts.map((text) => parse(data, text)?.final.frames.map((f) => [f.path, f.line, f.function]) ?? null);
process.stdout.write(JSON.stringify(out));
"""

# Loads the port and runs the follow-up questions on every case with a fixed answer policy (yes to all, no
# to all, or alternating), printing per case and policy [[asked facts], [[id, score], ...] after them].
INTERVIEW_RUNNER = """
import { readFileSync } from "node:fs";
import { explain, answer, nextQuestion, settled } from "./fixer-match.mjs";
const { data, texts, policies, limit } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = texts.map((text) => policies.map((policy) => {
  const result = explain(data, text);
  let matches = result.matches;
  const answered = [...result.answers];
  const shown = answered.length;
  while (answered.length - shown < limit && matches.length && !settled(data, matches)) {
    const question = nextQuestion(data, matches, answered);
    if (question === null) break;
    const reply = policy === "alternate" ? (answered.length - shown) % 2 === 0 : policy === "yes";
    answered.push({ question, reply });
    matches = answer(data, matches, question, reply);
  }
  return [answered.map((a) => a.question.fact), matches.map((m) => [m.id, m.score])];
}));
process.stdout.write(JSON.stringify(out));
"""
POLICIES = ("yes", "no", "alternate")


def _cases() -> list[tuple[str, str]]:
    cases = [(f"kb:{entry}#{number}", text) for entry, number, text in kb_examples()]
    for name, corpus in (("corpus", CORPUS), ("tune", TUNE), ("census", CENSUS), ("realcode", REALCODE)):
        if corpus.exists():
            for item in yaml.safe_load(corpus.read_text()):
                if item.get("traceback") and item.get("half", "tune") == "tune":
                    cases.append((f"{name}:{item['id']}", item["traceback"]))
    first = kb_examples()[0][2].rstrip("\n") + "\n"
    cases += [(f"after-a-crash:{n}", first + after) for n, after in enumerate(AFTER_A_CRASH)]
    cases += [(f"rich:{width}", rich_traceback(width, locals_=width == 80)[0]) for width in (60, 80, 120)]
    cases += [(f"long-line:{n}", text) for n, text in enumerate(LONG_LINES)]
    cases += [
        (f"wrapped-{width}:{entry}#{number}", word_wrapped(text, width))
        for entry, number, text in kb_examples()
        for width in (60, 80)
    ]
    return cases


def _run_node(tmp_path: Path, payload: dict[str, Any], runner: str = RUNNER) -> list[Any]:
    assert NODE is not None
    # the site's classic script, as a module the runners import from
    script = (JS / "fixer-match.js").read_text()
    (tmp_path / "fixer-match.mjs").write_text(
        script + "export const { explain, parse, answer, nextQuestion, settled } = globalThis.fixerMatch;\n"
    )
    (tmp_path / "runner.mjs").write_text(runner)
    (tmp_path / "input.json").write_text(json.dumps(payload))
    result = subprocess.run(
        [NODE, str(tmp_path / "runner.mjs"), str(tmp_path / "input.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def data(catalog: Catalog) -> dict[str, Any]:
    return matcher_data(catalog)


def test_export_is_json_and_covers_every_entry(data: dict[str, Any], catalog: Catalog) -> None:
    assert json.loads(json.dumps(data)) == data
    assert [e["id"] for e in data["entries"]] == [entry.id for entry in catalog]
    assert sum(len(e["examples"]) for e in data["entries"]) > len(catalog)


@pytest.mark.skipif(NODE is None, reason="`node` is not installed: cannot run the site's JavaScript matcher")
def test_browser_matcher_agrees_with_fixer_explain(tmp_path: Path, data: dict[str, Any], catalog: Catalog) -> None:
    """Exactly, on the text: detectors read code in Python and the page runs none of them."""
    matcher = Matcher(catalog, read_code=False)
    cases = _cases()
    assert len(cases) > 30
    ranked = _run_node(tmp_path, {"data": data, "texts": [text for _, text in cases]})
    first_disagreements = []
    ranking_disagreements = []
    for (name, text), js in zip(cases, ranked, strict=True):
        python = [[m.id, m.score] for m in matcher.explain(text).matches]
        if (python[0][0] if python else None) != (js[0][0] if js else None):
            first_disagreements.append(f"{name}: python {python[:3]} / js {js[:3]}")
        elif python != js:
            ranking_disagreements.append(f"{name}: python {python} / js {js}")
    assert first_disagreements == [], f"{len(first_disagreements)}/{len(cases)} disagree on the first match"
    assert ranking_disagreements == [], f"{len(ranking_disagreements)}/{len(cases)} rank differently"


@pytest.mark.skipif(NODE is None, reason="`node` is not installed: cannot run the site's JavaScript matcher")
def test_browser_asks_the_questions_fixer_asks_and_reranks_alike(
    tmp_path: Path, data: dict[str, Any], catalog: Catalog
) -> None:
    """The same question, in the same order, and the same ranking after each answer, for yes to every
    question, no to every one, and the two alternating, on every case the text leaves open."""
    matcher = Matcher(catalog, read_code=False)
    cases = [(name, text) for name, text in _cases() if not settled(matcher.explain(text).matches)]
    assert len(cases) > 30
    payload = {"data": data, "texts": [text for _, text in cases], "policies": POLICIES, "limit": 3}
    browser = _run_node(tmp_path, payload, INTERVIEW_RUNNER)
    disagreements = []
    for (name, text), js in zip(cases, browser, strict=True):
        result = matcher.explain(text)
        for policy, (js_asked, js_after) in zip(POLICIES, js, strict=True):
            replies = iter([True] * 3 if policy == "yes" else [False] * 3 if policy == "no" else [True, False, True])
            found = interview(
                result.matches, result.questions, lambda _q, replies=replies: next(replies), answered=result.answers
            )
            python = [[a.question.fact for a in found.answers], [[m.id, m.score] for m in found.matches]]
            if python != [js_asked, js_after]:
                disagreements.append(f"{name} ({policy}): python {python[0]} / js {js_asked}")
    assert disagreements == [], f"{len(disagreements)} interviews differ: {disagreements[:5]}"


@pytest.mark.skipif(NODE is None, reason="`node` is not installed: cannot run the site's JavaScript matcher")
def test_browser_reads_a_rich_box_to_the_frames_fixer_reads(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any], catalog: Catalog
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("r"))
    texts = [text for width in (80, 100) for text, _ in rich_boxes(width, range(1, width))]
    python = [[[f.path, f.line, f.function] for f in parse(text, catalog.known_messages).frames] for text in texts]
    assert _run_node(tmp_path_factory.mktemp("node"), {"data": data, "texts": texts}, FRAMES_RUNNER) == python


@pytest.mark.skipif(NODE is None, reason="`node` is not installed: cannot run the site's JavaScript matcher")
def test_browser_reads_headers_cut_at_a_console_width_to_the_frames_fixer_reads(
    tmp_path: Path, data: dict[str, Any], catalog: Catalog
) -> None:
    threads = yaml.safe_load(REALCODE.read_text())
    texts = [item["traceback"] for item in threads]
    python = [[[f.path, f.line, f.function] for f in parse(text, catalog.known_messages).frames] for text in texts]
    assert _run_node(tmp_path, {"data": data, "texts": texts}, FRAMES_RUNNER) == python


@pytest.mark.skipif(NODE is None, reason="`node` is not installed: cannot run the site's JavaScript matcher")
def test_translated_regexes_behave_like_python(tmp_path: Path) -> None:
    cases = [
        (r"(?i:cpu)", "CPU", True),
        (r"(?i:k)", "\u212a", True),
        (r"\bcuda\b", "在cuda", False),
        (r"\d+", "\u0661\u0662", True),
        (r"^a.b$", "a\nb", False),
        (r"(?s)^a.b$", "a\nb", True),
        (r"x$", "x\n", True),
        (r"(?P<n>ab)(?P=n)", "abab", True),
        (r"\s", "\x1c", True),
        (r"\s", "\ufeff", False),
        (r"[\w.'\"=(/-]+", "a.b'c\"=(/-", True),
        (r"a{,2}b", "aab", True),
        (r"}{", "}{", True),
        (r"^a{,}b{}$", "aaab{}", True),
    ]
    for pattern, text, expected in cases:
        assert bool(re.search(pattern, text)) is expected, pattern
    script = (
        "const cases = JSON.parse(process.argv[1]);"
        "process.stdout.write(JSON.stringify(cases.map(([s, t]) => new RegExp(s, 'u').test(t))));"
    )
    payload = json.dumps([[to_js(p), t] for p, t, _ in cases])
    result = subprocess.run([NODE or "node", "-e", script, payload], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [expected for _, _, expected in cases]


@pytest.mark.parametrize("pattern", [r"(?>a)", r"a*+", r"(?(1)a|b)", r"[\W]", r"(?x)a b", r"\0"])
def test_untranslatable_regexes_fail_loudly(pattern: str) -> None:
    with pytest.raises(UntranslatableRegex):
        to_js(pattern)


def test_pasted_text_never_becomes_html() -> None:
    script = (JS / "paste-box.js").read_text()
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", script)
    assert "textContent" in script
    assert not re.search(r"https?://", script + (JS / "fixer-match.js").read_text())
