"""The user's torch, not ours: the range a project declares, read from each file kind that declares one,
and a rewrite that needs a newer torch saying so in its diff, its safety note and its JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from fixer.explain.match import Matcher
from fixer.kb.catalog import load
from fixer.patching.needs import NEEDS, Need
from fixer.patching.plan import Patch, propose
from fixer.patching.targets import user_files
from fixer.patching.torch_versions import declared, unmet

PINNED = Path(__file__).parent / "projects" / "pinned_export"  # a pyproject.toml pinning torch~=2.3.1
# its script: an exported program moved with .to(), the codemod's own fixture without the error mark
FIXTURES = Path(__file__).parent / "fixtures" / "exported-program-move-to-device-pass"
SCRIPT = FIXTURES / "loaded_program_moved_with_to.in.py"
NEED = NEEDS["exported-program-move-to-device-pass"]

# file, its text, what fixer reads as the requirement, and whether it allows a torch before 2.5
DECLARATIONS = [
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["numpy", "torch~=2.3.1"]\n', "torch~=2.3.1", True),
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch>=2.5,<3"]\n', "torch<3,>=2.5", False),
    (
        "pyproject.toml",
        '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = {version = "^2.3", source = "pytorch-cu121"}\n',
        "torch ^2.3",
        True,
    ),
    ("pyproject.toml", '[tool.poetry.group.gpu.dependencies]\ntorch = "^2.6"\n', "torch ^2.6", False),
    (
        "requirements.txt",
        "numpy\ntorch==2.3.1+cu121 --index-url https://download.pytorch.org/whl/cu121\n",
        "torch==2.3.1+cu121",
        True,
    ),
    ("requirements-gpu.txt", "# torch>=1.0 is only a comment\ntorch>=2.6\n", "torch>=2.6", False),
    ("setup.py", 'setup(name="x", install_requires=["tqdm", "torch>=2.0,<2.4"])\n', "torch<2.4,>=2.0", True),
    ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    torch>=2.7\n", "torch>=2.7", False),
    ("environment.yml", "dependencies:\n  - python=3.10\n  - pytorch::pytorch=2.3\n", "pytorch=2.3", True),
    ("environment.yml", "dependencies:\n  - pip\n  - pip:\n    - torch==2.7.1\n", "torch==2.7.1", False),
    ("poetry.lock", '[[package]]\nname = "torch"\nversion = "2.3.1"\n', "torch==2.3.1 (locked)", True),
    ("uv.lock", 'version = 1\n[[package]]\nname = "torch"\nversion = "2.6.0"\n', "torch==2.6.0 (locked)", False),
    ("Pipfile.lock", '{"default": {"torch": {"version": "==2.4.0"}}}', "torch==2.4.0 (locked)", True),
]


@pytest.mark.parametrize(("name", "text", "written", "older"), DECLARATIONS, ids=[d[0] for d in DECLARATIONS])
def test_each_kind_of_project_file_gives_its_torch_requirement(tmp_path, name, text, written, older):
    (tmp_path / name).write_text(text)
    (found,) = declared(tmp_path / "src")
    assert (found.written, found.admits_before(Version(NEED.since)), found.file.name) == (written, older, name)


def test_the_nearest_folder_with_a_project_file_is_the_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "outer"\ndependencies = ["torch~=2.3.1"]\n')
    inner = tmp_path / "tools" / "serve"
    inner.mkdir(parents=True)
    (inner / "requirements.txt").write_text("torch>=2.6\n")
    assert [d.written for d in declared(inner)] == ["torch>=2.6"]
    assert unmet(NEED, inner / "serve.py") is None


def test_a_torch_older_than_the_need_installed_here_is_named(tmp_path):
    far_future = Need("99.0", "torch.someday")
    assert unmet(far_future, tmp_path / "x.py") == (
        f"needs torch>=99.0 (torch.someday), but torch {__import__('torch').__version__} is installed here"
    )


def _failure(project: Path) -> str:
    ran = subprocess.run(
        [sys.executable, "serve.py"], cwd=project, capture_output=True, text=True, timeout=120, check=False
    )
    assert ran.returncode != 0 and "RuntimeError" in ran.stderr, ran.stderr[-2000:]
    return ran.stderr


@pytest.fixture(scope="module")
def failure(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    project = tmp_path_factory.mktemp("pinned")
    _pinned(project)
    return project, _failure(project)


def _pinned(project: Path) -> None:
    shutil.copytree(PINNED, project, dirs_exist_ok=True)
    (project / "serve.py").write_text(SCRIPT.read_text().replace("  # fixer: error", ""))


def _patch(project: Path, text: str) -> Patch:
    explained = Matcher(load()).explain(text)
    assert explained.traceback is not None and explained.matches
    assert explained.matches[0].id == "exported-program-hardcoded-device"
    (patch,) = propose(user_files(explained.traceback), explained.matches[0])
    return patch


def test_a_rewrite_the_pinned_torch_lacks_says_so_in_the_diff_and_the_safety_note(failure, monkeypatch):
    project, text = failure
    patch = _patch(project, text)
    monkeypatch.chdir(project)  # the diff names files from the working directory, as `fixer patch` does
    said = (
        "needs torch>=2.5 (torch.export.passes.move_to_device_pass), but pyproject.toml declares torch~=2.3.1, "
        "which allows releases before 2.5"
    )
    assert (patch.applicability, patch.needs) == ("unsafe", said)
    assert said in patch.why
    assert patch.diff.splitlines()[0] == f"fixer: this patch {said}"
    original = project.parent / "original"
    _pinned(original)
    subprocess.run(["git", "init", "-q"], cwd=original, check=True)
    applied = subprocess.run(["git", "apply", "-"], cwd=original, input=patch.diff, text=True, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert (original / "serve.py").read_text() == patch.after


def test_the_json_and_the_terminal_carry_the_need(failure):
    project, text = failure
    log = project / "crash.log"
    log.write_text(text)
    shown = subprocess.run(
        [sys.executable, "-m", "fixer", "patch", "--json", str(log)], cwd=project, capture_output=True, text=True
    )
    (patch,) = json.loads(shown.stdout)["patches"]
    assert patch["needs"].startswith("needs torch>=2.5") and "torch~=2.3.1" in patch["needs"]
    card = subprocess.run(
        [sys.executable, "-m", "fixer", "show", "exported-program-hardcoded-device"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert "fixer patch's rewrite needs torch>=2.5 (torch.export.passes.move_to_device_pass)." in card.stdout


def test_a_project_that_declares_a_new_enough_torch_keeps_the_codemods_verdict(failure, tmp_path):
    project, text = failure
    (project / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch>=2.5"]\n')
    try:
        patch = _patch(project, text)
    finally:
        shutil.copy(PINNED / "pyproject.toml", project / "pyproject.toml")
    assert patch.needs == "needs torch>=2.5 (torch.export.passes.move_to_device_pass)"
    assert not any("declares" in why for why in patch.why)
