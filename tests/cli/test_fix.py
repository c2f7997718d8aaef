"""`fixer run --fix`: each bug script, and the ch. 6 fine-tuning script, patched round after round until
it runs, on the meta device standing in for a GPU; the series shown as one diff that `git apply` takes
and that one `fixer patch --revert` undoes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixer.cli import NOT_APPLIED, USAGE

ROOT = Path(__file__).resolve().parents[2]
BUGS = ROOT / "tests" / "live_bugs"
FINETUNE = ROOT / "tests" / "patching" / "llm_finetune"
# script -> (the causes patched, round by round; the extra options it needs)
SERIES = {
    "inputs_not_moved.py": (["inputs-not-moved"], []),
    "model_not_moved.py": (["model-not-moved"], []),
    "loss_weight.py": (["loss-weight-on-cpu"], []),
    "plain_attribute.py": (["plain-tensor-attribute"], []),
    "factory_in_forward.py": (["tensor-created-without-device"], []),
    "plain_list.py": (["submodules-in-plain-container"], ["--unsafe"]),  # new parameters: unsafe by design
    "two_bugs.py": (["inputs-not-moved", "tensor-created-without-device"], []),
    "finetune.py": (["submodule-replaced-after-to"], []),
}


def _fixer(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DEVICE": "meta",
        "TRAIN_DEVICE": "meta",
        "PYTHONPATH": str(ROOT),
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "FIXER_CACHE_DIR": str(project.parent / f"{project.name}-cache"),
    }
    return subprocess.run(
        [sys.executable, "-m", "fixer", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _project(where: Path, script: str) -> Path:
    if script == "finetune.py":
        shutil.copytree(FINETUNE, where, dirs_exist_ok=True)
    else:
        shutil.copy(BUGS / script, where / script)
    return where


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """Every script under `fixer run --fix --yes`, three at once: each round pays a torch import."""

    projects = {script: _project(tmp_path_factory.mktemp(script.removesuffix(".py")), script) for script in SERIES}

    def series(script: str) -> tuple[Path, subprocess.CompletedProcess]:
        project, options = projects[script], SERIES[script][1]
        return project, _fixer(project, "run", "--fix", "--yes", *options, "--diff", f"../{project.name}.diff", script)

    with ThreadPoolExecutor(3) as pool:  # the folders are made first: pytest's first mktemp is not thread-safe
        return dict(zip(SERIES, pool.map(series, SERIES), strict=True))


def _rounds(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("round ")]


@pytest.mark.parametrize("script", SERIES)
def test_each_script_is_patched_until_it_runs(script, fixed):
    _project_dir, done = fixed[script]
    causes = SERIES[script][0]
    assert done.returncode == 0, done.stderr[-3000:]
    rounds = _rounds(done.stderr)
    assert [line.split(":")[1].strip() for line in rounds[:-1]] == causes, rounds
    assert rounds[-1] == f"round {len(causes) + 1}: passed"
    assert "fixer: the command passed" in done.stderr


@pytest.mark.parametrize("script", SERIES)
def test_the_series_is_one_diff_that_applies_to_the_original_and_one_revert_undoes(script, fixed, tmp_path):
    project, _done = fixed[script]
    original = _project(tmp_path, script)
    diff = (project.parent / f"{project.name}.diff").read_bytes()
    assert diff.count(b"+++ ") == 1  # one file, however many rounds wrote it
    subprocess.run(["git", "init", "-q"], cwd=original, check=True)
    applied = subprocess.run(["git", "apply", "-"], cwd=original, input=diff, capture_output=True, check=False)
    assert applied.returncode == 0, applied.stderr
    assert (original / script).read_bytes() == (project / script).read_bytes()

    reverted = _fixer(project, "patch", "--revert", "--yes")
    assert reverted.returncode == 0, reverted.stderr
    source = FINETUNE if script == "finetune.py" else BUGS
    assert (project / script).read_bytes() == (source / script).read_bytes()


def _command_project(tmp_path: Path) -> tuple[Path, Path]:
    """A shell command that prints one traceback into a user file of this project, whatever is patched."""
    script = tmp_path / "train.py"
    shutil.copy(BUGS / "inputs_not_moved.py", script)
    log = tmp_path / "failure.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 9, in <module>\n'
        "    out = model(x)\n"
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n"
    )
    return script, log


def test_a_command_whose_error_comes_back_after_the_patch_stops_the_series(tmp_path):
    script, log = _command_project(tmp_path)
    done = _fixer(tmp_path, "run", "--fix", "--yes", "--", "sh", "-c", f"cat {log} >&2; exit 3")
    assert done.returncode == 3, done.stderr
    assert _rounds(done.stderr) == [
        "round 1: inputs-not-moved: patched train.py (move-inputs-to-model-device)",
        "round 2: inputs-not-moved",
    ]
    assert "round 2 failed with the same error as round 1: the patch did not fix it" in done.stderr
    assert "x = x.to(device)" in script.read_text()


def test_a_command_with_no_patch_left_stops_after_one_round(tmp_path):
    done = _fixer(
        tmp_path,
        "run",
        "--fix",
        "--",
        "sh",
        "-c",
        "echo 'RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
        "cuda:0 and cpu!' >&2; exit 1",
    )
    assert done.returncode == 1
    assert len(_rounds(done.stderr)) == 1
    assert "fixer: no patch left: " in done.stderr
    assert "the traceback names no file of yours that is on this machine" in done.stderr
    assert done.stdout == ""


def test_without_a_terminal_or_yes_nothing_is_written(tmp_path):
    script, log = _command_project(tmp_path)
    before = script.read_bytes()
    done = _fixer(tmp_path, "run", "--fix", "--", "sh", "-c", f"cat {log} >&2; exit 1")
    assert done.returncode == NOT_APPLIED
    assert "no terminal to ask for consent; pass --yes" in done.stderr
    assert script.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "--", "sh", "-c", "exit 1"], "`fixer run -- COMMAND` goes with --fix"),
        (["run", "--yes", "train.py"], "--yes, --unsafe, --root and --diff go with --fix"),
        (["run", "--fix", "--rounds", "0", "train.py"], "positive whole number"),
        (["run", "--fix", "missing.py"], "missing.py: no such file"),
    ],
)
def test_misused_options_are_one_line_and_usage_status(tmp_path, args, said):
    (tmp_path / "train.py").write_text("print('ran')\n")
    done = _fixer(tmp_path, *args)
    assert done.returncode == USAGE
    assert said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_arguments_after_the_script_reach_it_as_given(tmp_path):
    (tmp_path / "echo_args.py").write_text("import sys\nprint(sys.argv[1:])\n")
    done = _fixer(tmp_path, "run", "echo_args.py", "--", "--fix", "x")
    assert done.stdout == "['--', '--fix', 'x']\n"
