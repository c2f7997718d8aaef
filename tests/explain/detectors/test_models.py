"""The model a failing line calls, followed out through the frames that passed it down."""

from __future__ import annotations

import shutil
from pathlib import Path

from fixer.explain.detectors import Code, detect
from fixer.explain.parse import Frame

PROJECT = Path(__file__).parents[2] / "patching" / "projects" / "distill"


def _frames(folder: Path, *where: tuple[str, int, str]) -> list[Frame]:
    """Frames as a traceback lists them, outermost first, with the code each file has on that line."""
    return [
        Frame(
            path=str(folder / name),
            line=line,
            function=function,
            code=(folder / name).read_text().splitlines()[line - 1].strip(),
            library=None,
        )
        for name, line, function in where
    ]


def _line(folder: Path, name: str, text: str) -> int:
    lines = (folder / name).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.strip().startswith(text))


def test_a_model_passed_down_two_frames_and_never_moved_is_found_where_it_was_built(tmp_path):
    shutil.copytree(PROJECT, tmp_path, dirs_exist_ok=True)
    frames = _frames(
        tmp_path,
        ("distill.py", _line(tmp_path, "distill.py", "distill_epoch(student, teacher"), "<module>"),
        ("distill.py", _line(tmp_path, "distill.py", "targets = soft_targets(teacher"), "distill_epoch"),
        ("teachers.py", _line(tmp_path, "teachers.py", "return (teacher(images)"), "soft_targets"),
    )
    found = detect(Code.of(frames))
    built = _line(tmp_path, "distill.py", "teacher = build_teacher()")
    assert found["model-never-moved"][0].startswith(f"distill.py:{built}: `teacher` is built here, never moved")


def test_a_model_passed_down_and_moved_where_it_was_built_is_not_reported(tmp_path):
    shutil.copytree(PROJECT, tmp_path, dirs_exist_ok=True)
    script = tmp_path / "distill.py"
    script.write_text(
        script.read_text().replace("    student.to(device)\n", "    student.to(device)\n    teacher.to(device)\n")
    )
    frames = _frames(
        tmp_path,
        ("distill.py", _line(tmp_path, "distill.py", "distill_epoch(student, teacher"), "<module>"),
        ("distill.py", _line(tmp_path, "distill.py", "targets = soft_targets(teacher"), "distill_epoch"),
        ("teachers.py", _line(tmp_path, "teachers.py", "return (teacher(images)"), "soft_targets"),
    )
    assert "model-never-moved" not in detect(Code.of(frames))
