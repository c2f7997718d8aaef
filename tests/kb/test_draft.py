"""`fixer kb new`: a draft entry from a real traceback loads, its signature finds the message it was
made from (with other device ordinals too), its example is the paste byte for byte, and the lint
holds it back until a person has written every TODO."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import corpus_items, kb_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixer.cli.common import NO_TRACEBACK, OK, USAGE, CliError
from fixer.cli.kb import new
from fixer.explain.match import Matcher
from fixer.explain.narrow import within_reach
from fixer.explain.parse import parse
from fixer.kb.catalog import Catalog, read_entry
from fixer.kb.draft import MAX_SIGNATURE, PLACEHOLDER_SOURCE, Draft, DraftError, NoTraceback, draft_entry
from fixer.kb.lint import lint
from fixer.kb.schema import ENTRY_ID, Entry
from fixer.output.export import to_js
from fixer.output.redact import redact

DEVICE_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    loss = model(batch)\n"
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
)
# Every field a person must write, as the lint names them.
TODO_FIELDS = {
    "title",
    "summary",
    "meaning",
    "cause",
    "fix.summary",
    "fix.steps[0]",
    "fix.before",
    "fix.after",
    "fix.safety_note",
    "fix.manual_because",
    "quiz.question",
    "quiz.answer",
    "quiz.wrong[0]",
    "quiz.wrong[1]",
    "quiz.wrong[2]",
    "quiz.explanation",
}


def _written(draft: Draft, directory: Path) -> Entry:
    """The draft as `fixer kb lint` and `load` read it: from its own file."""
    path = directory / f"{draft.id}.yaml"
    path.write_text(draft.yaml, encoding="utf-8")
    return read_entry(path)


def _other_ordinals(message: str) -> str:
    return re.sub(r"\b(cuda|mps|xpu):(\d+)", lambda m: f"{m[1]}:{int(m[2]) + 1}", message)


def _check_draft(text: str, catalog: Catalog, matcher: Matcher, directory: Path) -> Draft | None:
    """What every draft of a real traceback must be: it loads, with a new valid id, a signature that
    finds its own message (as printed, as the matcher reads it, with other device ordinals) and that the
    paste box can translate, the exception printed, and the paste as its example, redacted as a public
    post is. A traceback whose message was cut off (frames alone) has nothing to make a signature of:
    refused."""
    tb = matcher.explain(text).traceback
    if tb is None or not tb.message:
        with pytest.raises(NoTraceback):
            draft_entry(text, catalog)
        return None
    draft = draft_entry(text, catalog)
    entry = _written(draft, directory)
    assert entry.id == draft.id
    assert re.fullmatch(ENTRY_ID, draft.id) and draft.id not in catalog.entries
    signature = entry.signatures[0]
    unified = " ".join(tb.message.split())
    for message in (tb.message, unified, _other_ordinals(tb.message)):
        assert re.search(signature.pattern, message), (signature.pattern, message)
    assert len(signature.pattern) <= MAX_SIGNATURE
    to_js(signature.pattern)
    assert signature.exception == (tb.exception.rsplit(".", 1)[-1] if tb.exception else None)
    assert entry.examples[0].traceback == redact(text)
    assert str(entry.examples[0].source) == PLACEHOLDER_SOURCE
    return draft


KB_EXAMPLES = kb_examples()
CORPUS = corpus_items()


@pytest.mark.parametrize(("entry_id", "number", "text"), KB_EXAMPLES, ids=[f"{e}-{n}" for e, n, _ in KB_EXAMPLES])
def test_a_draft_of_each_kb_example_loads_and_names_the_entry_that_matches_it(
    entry_id, number, text, catalog, matcher, tmp_path
):
    draft = _check_draft(text, catalog, matcher, tmp_path)
    if draft is None:
        return
    entry = catalog.get(entry_id)
    assert entry is not None
    # The KB already explains its own examples: the draft says so, as the lint asks of them.
    if entry.examples[number - 1].ambiguous:
        assert within_reach(matcher.explain(text).matches, entry_id)
        assert entry_id in [found for found, _ in draft.closest]
    else:
        assert [found for found, _ in draft.closest[:1]] == [entry_id]
    scores = [score for _, score in draft.closest]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("item", CORPUS, ids=[item["id"] for item in CORPUS])
def test_a_draft_of_each_corpus_traceback_loads(item, catalog, matcher, tmp_path):
    _check_draft(item["traceback"], catalog, matcher, tmp_path)


def test_the_signature_stands_for_what_varies_devices_included(catalog, matcher, tmp_path):
    text = (
        "RuntimeError: Failed at /home/me/proj/train.py: tensor at 0x7f00aa of torch.Size([2, 3]) and "
        "torch.cuda.HalfTensor on cuda:0, step 12\n"
    )
    pattern = _written(draft_entry(text, catalog, redact=False), tmp_path).signatures[0].pattern
    assert pattern == (
        r"Failed at \S+: tensor at 0x[0-9a-fA-F]+ of torch\.Size\(\[[\d, ]*\]\) and torch\.cuda\.\w+Tensor on "
        r"\w+(?::\d+)?, step \d+"
    )
    other = (
        "Failed at C:\\work\\run\\main.py: tensor at 0xdeadbeef of torch.Size([64]) and torch.cuda.FloatTensor "
        "on cuda:3, step 7"
    )
    assert re.search(pattern, other)
    assert re.search(pattern, other.replace("cuda:3", "cpu"))  # one paste's devices are not the cause's
    assert not re.search(pattern, other.replace("step 7", "epoch 7"))


def test_a_draft_holds_no_local_path_user_host_or_token_unless_asked(catalog, tmp_path):
    text = (
        "[alice@gpu-node-17.corp.example.internal ~]$ HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCD python train.py\n"
        "Traceback (most recent call last):\n"
        '  File "/home/alice/projects/acme-secret/train.py", line 88, in <module>\n'
        "    loss = model(batch)\n"
        '  File "/opt/conda/envs/acme/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, '
        "in _call_impl\n"
        "    return forward_call(*args, **kwargs)\n"
        '  File "/mnt/team-acme/alice/acme/model.py", line 40, in forward\n'
        "    return self.head(x + self.bias_table)\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n"
    )
    kept = draft_entry(text, catalog, redact=False).yaml
    drafted = draft_entry(text, catalog).yaml
    for private in ("alice", "gpu-node-17", "hf_abcdefghij", "/home/", "/mnt/team-acme", "/opt/conda"):
        assert private in kept  # the check below can fail
        assert private not in drafted, private
    example = _written(draft_entry(text, catalog), tmp_path).examples[0].traceback
    read = parse(example)
    assert read is not None and read.frames[-1].function == "forward"  # redacted, it still reads as a traceback


def test_a_message_wrapped_after_a_comma_goes_on_to_the_next_line(catalog, tmp_path):
    text = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices,\nmeta and cpu!\n"
    )
    pattern = _written(draft_entry(text, catalog), tmp_path).signatures[0].pattern
    assert pattern.endswith(r"two devices,\s+\w+(?::\d+)? and \w+(?::\d+)?!")


def test_a_long_message_is_cut_between_words_without_trailing_punctuation(catalog, tmp_path):
    text = "ValueError: " + " ".join(f"word{n}," for n in range(80)) + "\n"
    pattern = _written(draft_entry(text, catalog), tmp_path).signatures[0].pattern
    assert len(pattern) <= MAX_SIGNATURE
    assert re.fullmatch(r"(?:word\d+, )*word\d+", pattern)


def test_a_backslash_before_a_digit_is_not_read_as_a_backreference(catalog, tmp_path):
    text = "RuntimeError: cannot parse the escape \\1x in the device string cuda:0\n"
    pattern = _written(draft_entry(text, catalog), tmp_path).signatures[0].pattern
    assert re.search(pattern, "cannot parse the escape \\1x in the device string cuda:1")


def test_the_id_is_made_of_the_message_words_and_made_unique(catalog, tmp_path):
    first = draft_entry(DEVICE_ERROR, catalog)
    assert first.id == "expected-tensors-same-device"
    (tmp_path / f"{first.id}.yaml").write_text("retired: true\n")  # a file's id is taken, retired or not
    (tmp_path / f"{first.id}-2.yaml").write_text("")
    elsewhere = Catalog(entries=catalog.entries, root=tmp_path)
    assert draft_entry(DEVICE_ERROR, elsewhere).id == f"{first.id}-3"


def test_a_message_without_latin_words_gets_an_id_from_its_exception(catalog, tmp_path):
    draft = draft_entry("RuntimeError: 设备不匹配 cuda:0 / cpu\n", catalog)
    assert draft.id == "runtime-error"
    _written(draft, tmp_path)


def test_a_message_of_one_long_run_of_letters_gets_a_short_id(catalog):
    draft = draft_entry("RuntimeError: " + "a" * 8000 + " on cuda:0\n", catalog)
    assert draft.id == "runtime-error"


def test_a_paste_too_big_for_an_entry_file_is_refused(catalog):
    with pytest.raises(DraftError, match="paste only the traceback"):
        draft_entry("x" * 1_100_000 + "\n\n" + DEVICE_ERROR, catalog)


@pytest.mark.parametrize("entry_id", ["Model_On_CPU", "-leading", "two--dashes", "", "model-not-moved"])
def test_an_invalid_or_taken_id_is_refused(entry_id, catalog):
    with pytest.raises(DraftError, match="id"):
        draft_entry(DEVICE_ERROR, catalog, entry_id=entry_id)


def test_a_given_id_and_source_are_used(catalog, tmp_path):
    source = "https://github.com/pytorch/pytorch/issues/1"
    entry = _written(draft_entry(DEVICE_ERROR, catalog, entry_id="my-new-cause", source=source), tmp_path)
    assert entry.id == "my-new-cause"
    assert str(entry.examples[0].source) == source


def test_a_source_that_is_no_url_is_refused(catalog):
    with pytest.raises(DraftError, match="not an http"):
        draft_entry(DEVICE_ERROR, catalog, source="github.com/pytorch/pytorch/issues/1")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "the training run stopped after the third epoch\n",
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    model(x)\n',
    ],
    ids=["empty", "prose", "frames-without-message"],
)
def test_input_without_an_error_message_is_refused(text, catalog):
    with pytest.raises(NoTraceback):
        draft_entry(text, catalog)


LAST_LINE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)


@pytest.mark.parametrize(
    ("text", "style"),
    [
        (DEVICE_ERROR, "|"),
        (DEVICE_ERROR.rstrip("\n"), "|-"),
        ("    indented first line\n" + LAST_LINE + "\n\n\n", "|2+"),
        ("trailing spaces   \n" + LAST_LINE + "\n", '"'),
        ("a\ttab\n" + LAST_LINE + "\n", '"'),
        ("only spaces below\n   \n" + LAST_LINE + "\n", '"'),
        ("windows line ends\r\n" + LAST_LINE + "\r\n", '"'),
        ("a next-line character:\x85in a log\n" + LAST_LINE + "\n", '"'),
    ],
    ids=["block", "no-final-newline", "indented", "trailing-spaces", "tab", "blank-spaces", "crlf", "nel"],
)
def test_the_traceback_round_trips_as_a_literal_block_or_quoted(text, style, catalog, tmp_path):
    draft = draft_entry(text, catalog, redact=False)
    written_as = re.search(r'^    traceback: (\|[-+0-9]*$|")', draft.yaml, re.MULTILINE)
    assert written_as is not None and written_as[1] == style
    assert _written(draft, tmp_path).examples[0].traceback == text


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(codec="utf-8"), max_size=200))
def test_any_text_before_the_error_round_trips(catalog, tmp_path_factory, noise):
    text = noise + "\n\n" + LAST_LINE + "\n"
    draft = draft_entry(text, catalog, redact=False)
    assert _written(draft, tmp_path_factory.mktemp("draft")).examples[0].traceback == text


def _todo_paths(problems: list[str], file: str) -> set[str]:
    found = (re.fullmatch(rf"{re.escape(file)}: TODO left in (\S+): \S.*", p) for p in problems)
    return {m[1] for m in found if m}


def test_lint_names_each_todo_of_a_fresh_draft_and_none_once_written(catalog, tmp_path):
    draft = draft_entry(DEVICE_ERROR, catalog)
    path = tmp_path / f"{draft.id}.yaml"
    path.write_text(draft.yaml, encoding="utf-8")
    problems = [str(p) for p in lint(tmp_path)[1]]
    assert _todo_paths(problems, path.name) == TODO_FIELDS
    placeholder = (
        f"{path.name}: examples[0].source is a placeholder (example.com): link the public page it is quoted from"
    )
    assert placeholder in problems
    assert len(problems) == len(TODO_FIELDS) + 1

    data = yaml.safe_load(draft.yaml)

    def written(value: object, path: str) -> object:
        if isinstance(value, dict):
            return {k: written(v, f"{path}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [written(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return f"Written by a person for {path}." if isinstance(value, str) and value.startswith("TODO") else value

    data = written(data, "")
    data["examples"][0]["source"] = "https://github.com/pytorch/pytorch/issues/1"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert [str(p) for p in lint(tmp_path)[1]] == []


def test_lint_names_a_todo_left_anywhere_by_its_path(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    source = Path(__file__).resolve().parents[2] / "kb" / "model-not-moved.yaml"
    data = yaml.safe_load(source.read_text())
    data["fix"]["steps"].append("TODO")
    data["quiz"]["wrong"][1] = "TODO: a wrong answer\nthat spans two lines"
    (kb / "model-not-moved.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    problems = [str(p) for p in lint(kb)[1]]
    steps = len(data["fix"]["steps"]) - 1
    assert f"model-not-moved.yaml: TODO left in fix.steps[{steps}]: write it" in problems
    assert "model-not-moved.yaml: TODO left in quiz.wrong[1]: a wrong answer" in problems


@pytest.fixture
def shipped_kb(monkeypatch):
    """The CLI reads the KB of this checkout, with no team directory from the environment."""
    monkeypatch.delenv("FIXER_KB_PATH", raising=False)
    monkeypatch.delenv("FIXER_KB", raising=False)


def test_kb_new_writes_the_draft_into_a_directory_and_refuses_to_overwrite_it(shipped_kb, tmp_path, capsys):
    assert new(DEVICE_ERROR, entry_id="cpu-batch", source=None, output=str(tmp_path), force=False) == OK
    written = tmp_path / "cpu-batch.yaml"
    assert read_entry(written).id == "cpu-batch"
    err = capsys.readouterr().err
    assert re.search(r"the KB already matches this traceback: [a-z0-9-]+ \(\d+\), ", err)
    assert f"next: fill in the TODO fields, then `fixer kb lint --kb {tmp_path}`" in err

    written.write_text("kept\n")
    with pytest.raises(CliError, match="already exists; pass --force") as refused:
        new(DEVICE_ERROR, entry_id="cpu-batch", source=None, output=str(written), force=False)
    assert refused.value.code == USAGE
    assert written.read_text() == "kept\n"
    assert new(DEVICE_ERROR, entry_id="cpu-batch", source=None, output=str(written), force=True) == OK
    assert read_entry(written).id == "cpu-batch"


def test_kb_new_writes_to_stdout_and_comments_on_stderr(shipped_kb, capsys):
    assert new(DEVICE_ERROR, entry_id=None, source=None, output=None, force=False) == OK
    out, err = capsys.readouterr()
    assert out.startswith("# yaml-language-server: $schema=../docs/schema/entry.schema.json\nid: ")
    assert yaml.safe_load(out)["examples"][0]["traceback"] == DEVICE_ERROR
    assert "next: save it as expected-tensors-same-device.yaml, fill in the TODO fields" in err


def test_kb_new_refuses_an_invalid_id_as_a_usage_error(shipped_kb, tmp_path):
    with pytest.raises(CliError, match="not kebab-case") as refused:
        new(DEVICE_ERROR, entry_id="Model_On_CPU", source=None, output=str(tmp_path), force=False)
    assert refused.value.code == USAGE
    assert list(tmp_path.iterdir()) == []


def test_kb_new_without_a_traceback_exits_no_traceback(shipped_kb):
    with pytest.raises(CliError, match="no traceback") as refused:
        new("nothing went wrong\n", entry_id=None, source=None, output=None, force=False)
    assert refused.value.code == NO_TRACEBACK


def test_a_draft_in_a_team_directory_points_its_editor_at_a_schema_beside_it(shipped_kb, tmp_path, capsys):
    """`../docs/schema/...` exists only in fixer's own tree; a team's directory gets the schema beside it."""
    assert new(DEVICE_ERROR, entry_id="cpu-batch", source=None, output=str(tmp_path), force=False) == OK
    first = (tmp_path / "cpu-batch.yaml").read_text().split("\n", 1)[0]
    assert first == "# yaml-language-server: $schema=entry.schema.json"
    assert f"fixer kb schema -o {tmp_path / 'entry.schema.json'}" in capsys.readouterr().err


def test_a_draft_is_neither_ranked_nor_exported_until_asked_with_drafts(shipped_kb, tmp_path, capsys):
    from fixer.cli import main

    team, paste = tmp_path / "team", tmp_path / "crash.log"
    team.mkdir()
    paste.write_text(DEVICE_ERROR)
    assert main(["kb", "new", str(paste), "-o", str(team)]) == OK
    [draft] = team.glob("*.yaml")
    capsys.readouterr()

    def ranked(*options: str) -> list[str]:  # what explain ranks, given these options
        assert main(["--kb", str(team), *options, "explain", "--json", "--top", "50", str(paste)]) == OK
        return [match["id"] for match in json.loads(capsys.readouterr().out)["matches"]]

    assert main(["--kb", str(team), "explain", "--json", "--top", "50", str(paste)]) == OK
    captured = capsys.readouterr()
    assert draft.stem not in [match["id"] for match in json.loads(captured.out)["matches"]]
    assert f"left out a draft entry, TODOs unwritten: {draft}" in captured.err
    assert draft.stem in ranked("--drafts")
    assert main(["--kb", str(team), "export", "--format", "wiki", "-o", str(tmp_path / "wiki")]) == 1
    err = capsys.readouterr().err
    assert f"not exported: draft entries with TODOs left: {draft}" in err and "TODO left in title" in err
    assert not (tmp_path / "wiki").exists() or not any((tmp_path / "wiki").iterdir())
    assert main(["--kb", str(team), "--drafts", "export", "--format", "wiki", "-o", str(tmp_path / "wiki")]) == OK
    assert (tmp_path / "wiki" / f"{draft.stem}.md").is_file()
