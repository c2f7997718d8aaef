"""Reading the user's project before asking them: a line in their code answers a question, with its file
and line, and the same paste asks instead where no project shows it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fixer.explain.match import Explanation, Matcher
from fixer.explain.narrow import MARGIN, answer, interview, next_question, settled
from fixer.explain.project import MAX_BYTES, current, root_of, sightings
from fixer.kb.catalog import Catalog

EXPORTED = "exported-program-hardcoded-device"
# A bare two-GPU message, as KB examples quote it: its text alone cannot name the cause.
BARE_TWO_GPUS = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!\n"
)
SERVE = 'import torch\n\nprogram = torch.export.load("detector.pt2")\nboxes = program.module()(images)\n'


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _explain_json(cwd: Path, *args: str, stdin: str = BARE_TWO_GPUS) -> dict:
    """`fixer explain --json` run in `cwd`, reading the project around it as a user's run would."""
    env = {k: v for k, v in os.environ.items() if k != "FIXER_PROJECT"}
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "explain", "--json", *args, "-"],
        input=stdin.encode(),
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def test_the_project_is_the_git_work_tree_around_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = _project(tmp_path, {"src/serve.py": SERVE})
    assert root_of(root / "src") == root
    assert root_of(tmp_path) is None
    monkeypatch.chdir(root / "src")
    monkeypatch.delenv("FIXER_PROJECT")
    assert current() == root
    for off in ("none", ""):
        monkeypatch.setenv("FIXER_PROJECT", off)
        assert current() is None
    monkeypatch.setenv("FIXER_PROJECT", str(tmp_path))
    assert current() == tmp_path


def test_a_call_in_the_project_answers_yes_with_its_file_and_line(tmp_path: Path, matcher: Matcher):
    root = _project(tmp_path, {"notes.txt": "torch.export.load(", "src/serve.py": SERVE})
    seen = sightings(root, matcher.index.facts).found
    assert seen["captured-program"] == 'src/serve.py:3: program = torch.export.load("detector.pt2")'
    assert "device-map" not in seen  # absence answers nothing


def test_installed_packages_tests_prose_and_huge_files_are_not_the_project(tmp_path: Path, matcher: Matcher):
    root = _project(
        tmp_path,
        {
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
            ".venv/lib/site-packages/lib.py": SERVE,
            "env/pyvenv.cfg": "home = /usr/bin\n",
            "env/lib.py": SERVE,
            "node_modules/x.py": SERVE,
            "big.py": SERVE + "#" * MAX_BYTES,
            "tests/test_serve.py": SERVE,
            "test_export.py": SERVE,
            "notes.py": '"""Load it with `torch.export.load("x.pt2")`."""\n# or torch.export.load(path)\n',
            "settings.py": "device_map = {'': 0}  # an assignment, not the keyword\n",
        },
    )
    assert sightings(root, matcher.index.facts).found == {}


def test_fixers_own_tree_is_no_users_project(monkeypatch: pytest.MonkeyPatch):
    """It names every cause's code on purpose, in its detectors, codemods and tests."""
    monkeypatch.delenv("FIXER_PROJECT")
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert current() is None


def test_inside_a_project_that_loads_an_exported_program_a_bare_message_needs_no_question(
    tmp_path: Path, catalog: Catalog
):
    root = _project(tmp_path, {"serve.py": SERVE})
    inside = Matcher(catalog, project=root).explain(BARE_TWO_GPUS)
    # The line leads by 24 points, one short of settled (MARGIN): the census's third wave added cases of
    # device_map splits behind this very message, and so their prior. No question is left worth asking.
    assert inside.matches[0].id == EXPORTED and inside.matches[0].score - inside.matches[1].score >= MARGIN - 1
    assert next_question(inside.matches, inside.questions, inside.answers) is None
    assert [(a.question.fact, a.reply, a.where) for a in inside.answers if not a.from_text] == [
        ("captured-program", True, 'serve.py:3: program = torch.export.load("detector.pt2")')
    ]
    outside = Matcher(catalog).explain(BARE_TWO_GPUS)
    assert outside.matches[0].id != EXPORTED and not settled(outside.matches)


def test_the_command_that_started_the_run_answers_too(catalog: Catalog):
    bare = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )
    resumed = Matcher(catalog, command="python train.py --resume runs/last.pt").explain(bare)
    assert [(a.question.fact, a.where) for a in resumed.answers if not a.from_text] == [
        ("resumed", "the command: --resume")
    ]
    assert resumed.matches[0].id == "optimizer-state-after-resume"
    assert resumed.matches[0].reasons[0].text.startswith("yes, read from the command: --resume: ")
    spread = Matcher(catalog, command="torchrun --nproc_per_node=4 train.py resume=false").explain(bare)
    assert [a.question.fact for a in spread.answers if not a.from_text] == ["multi-process"]
    assert all(a.from_text for a in Matcher(catalog, command="python train.py").explain(bare).answers)


# A real traceback (hardcoded-device-ordinal's first KB example): its script sets a GPU number and moves
# the model there; nothing in it starts several processes.
TEACHER = "import torch\n" + "\n" * 58 + 'device = torch.device("cuda:1")\nmodel = _Teacher(patch_size).to(device)\n'


def test_a_project_without_distributed_code_argues_against_more_ranks_than_gpus(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
):
    """The whole project, whose file the traceback ran, shows no process group: more processes than GPUs
    is then less likely, never ruled out, and the person can still be asked how the run was started."""
    traceback = next(e for e in catalog.get("hardcoded-device-ordinal").examples if "teacher_train" in e.traceback)  # type: ignore[union-attr]
    root = _project(tmp_path, {"teacher_train.py": TEACHER})
    monkeypatch.chdir(root)  # the frame names teacher_train.py relative to where the script ran
    text_only = {m.id: m for m in Matcher(catalog).explain(traceback.traceback).matches}
    inside = Matcher(catalog, project=root).explain(traceback.traceback)
    soft = {a.question.fact: a for a in inside.answers if a.recall is not None}
    assert soft["distributed-code"].reply is False
    assert soft["distributed-code"].where == "nothing in the 1 Python file of this project shows it"
    ranked = {m.id: m for m in inside.matches}
    lowered = ranked["more-ranks-than-gpus"]
    assert lowered.reasons[0].text.startswith("probably not: nothing in the 1 Python file")
    assert text_only["more-ranks-than-gpus"].score - 15 < lowered.score < text_only["more-ranks-than-gpus"].score
    assert inside.matches[0].id == "hardcoded-device-ordinal"
    assert _next_fact(inside) != "distributed-code"  # read from the code, never asked

    ddp = _project(tmp_path / "ddp", {"teacher_train.py": TEACHER + "torch.distributed.init_process_group('nccl')\n"})
    monkeypatch.chdir(ddp)
    seen = Matcher(catalog, project=ddp).explain(traceback.traceback)
    assert [a.reply for a in seen.answers if a.question.fact == "distributed-code"] == [True]
    monkeypatch.chdir(tmp_path)  # the traceback's file is not here: the project is not the run's
    elsewhere = Matcher(catalog, project=root).explain(traceback.traceback)
    assert not any(a.recall is not None for a in elsewhere.answers)


def _next_fact(result: Explanation) -> str | None:
    question = next_question(result.matches, result.questions, result.answers, worth=0)
    return question.fact if question else None


def test_a_project_read_in_part_says_nothing_by_what_it_lacks(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
):
    traceback = next(e for e in catalog.get("hardcoded-device-ordinal").examples if "teacher_train" in e.traceback)  # type: ignore[union-attr]
    root = _project(tmp_path, {"teacher_train.py": TEACHER, **{f"pkg/m{n}.py": "x = 1\n" for n in range(3)}})
    monkeypatch.chdir(root)
    monkeypatch.setattr("fixer.explain.project.MAX_FILES", 2)
    result = Matcher(catalog, project=root).explain(traceback.traceback)
    assert not any(a.recall is not None for a in result.answers)


def test_what_the_traceback_shows_is_not_asked_and_moves_nothing(catalog: Catalog):
    """A message naming cuda:1 says the process sees several GPUs: that question is spared, and the scores,
    which weigh the text already, stay as the text made them."""
    result = Matcher(catalog).explain(BARE_TWO_GPUS)
    shown = {a.question.fact: a for a in result.answers}
    assert shown["several-gpus"].where == "the traceback: cuda:1" and shown["several-gpus"].from_text
    assert shown["cuda-available"].reply is True
    asked: list[str] = []
    interview(result.matches, result.questions, lambda q: asked.append(q.fact), limit=10, answered=result.answers)
    assert asked and not set(asked) & set(shown)
    assert answer(result.matches, shown["several-gpus"]) == result.matches


def test_a_settled_ranking_is_not_reread(tmp_path: Path, catalog: Catalog):
    root = _project(tmp_path, {"serve.py": SERVE})
    var = (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
        "and cpu! (when checking argument for argument state_steps in method wrapper_CUDA___fused_adamw_)"
    )
    assert Matcher(catalog, project=root).explain(var) == Matcher(catalog).explain(var)


def test_explain_reads_the_project_it_runs_in_and_asks_outside_it(tmp_path: Path):
    root = _project(tmp_path, {"serve.py": SERVE})
    inside = _explain_json(root)
    assert inside["matches"][0]["id"] == EXPORTED and inside["uncertain"]["question"] is None
    assert [a["where"] for a in inside["answers"] if not a["from_text"]] == [
        'serve.py:3: program = torch.export.load("detector.pt2")'
    ]
    outside = _explain_json(tmp_path)
    assert outside["confident"] is False and outside["uncertain"]["question"]
    assert all(a["from_text"] for a in outside["answers"])
    assert _explain_json(root, "--no-project")["matches"][0]["id"] != EXPORTED


@pytest.mark.parametrize("reply", ["yes", "no"])
def test_an_answer_given_up_front_moves_the_ranking_as_json_said_it_would(tmp_path: Path, reply: str):
    before = _explain_json(tmp_path)
    fact = before["uncertain"]["question_fact"]
    after = _explain_json(tmp_path, "--answer", f"{fact}={reply}")
    promised = before["uncertain"]["if_yes" if reply == "yes" else "if_no"]
    assert [{"id": m["id"], "score": m["score"]} for m in after["matches"]] == promised
    assert [a for a in after["answers"] if not a["from_text"]] == [
        {
            "fact": fact,
            "question": before["uncertain"]["question"],
            "reply": reply == "yes",
            "where": None,
            "from_text": False,
            "recall": None,
        }
    ]


def test_an_answer_about_no_known_fact_is_a_usage_error(tmp_path: Path):
    for given, said in (("moon-phase=yes", b"no question about moon-phase"), ("resumed", b"write FACT=yes or FACT=no")):
        done = subprocess.run(
            [sys.executable, "-m", "fixer", "explain", "--answer", given, "-"],
            input=BARE_TWO_GPUS.encode(),
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and said in done.stderr and b"Traceback" not in done.stderr


def test_answers_against_every_known_cause_say_probably_not_in_the_kb(tmp_path: Path, matcher: Matcher):
    """The all-"no" path, given on the command line: no winner at a few points, the verdict and the next
    steps instead, in the terminal and in JSON."""
    noes = [f"{q.fact}=no" for q in matcher.index.facts if q.fact not in {"cuda-available", "model-moved"}]
    args = [a for fact in noes for a in ("--answer", fact)]
    document = _explain_json(tmp_path, *args)
    assert document["beyond_kb"] is True and document["confident"] is False
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "explain", "--no-input", *args, "-"],
        input=BARE_TWO_GPUS.encode(),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    said = " ".join(done.stdout.decode().split())
    assert "Probably not in the KB" in said and "Most likely cause" not in said
    assert "fixer kb new" in said


def test_fixer_questions_lists_every_fact_an_entry_speaks_of(catalog: Catalog, tmp_path: Path):
    command = [sys.executable, "-m", "fixer", "questions", "--json"]
    done = subprocess.run(command, capture_output=True, cwd=tmp_path, timeout=60, check=True)
    listed = {q["fact"]: q for q in json.loads(done.stdout)}
    assert {fact for entry in catalog for fact in entry.facts} <= listed.keys()
    assert all(q["question"].endswith("?") and q["check"] for q in listed.values())
    assert [fact for fact, q in listed.items() if not q["asked"]] == ["distributed-code"]
