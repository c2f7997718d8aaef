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


STREAMER = """\
import torch
from audio import MelSpectrogram


class Streamer:
    def __init__(self, encoder):
        self.encoder = encoder
        self.mel = MelSpectrogram(n_mels=80)

    def step(self, samples):
        chunk = torch.as_tensor(samples).to(self.encoder.device)
        return self.mel.features(chunk)
"""


def test_an_installed_library_s_attribute_model_left_behind_is_found_in_its_own_file(tmp_path):
    # WhisperLiveKit#197's shape (benchmarks/realcode): the library moves the audio chunk to the model's
    # device and hands it to a preprocessor built in its constructor and never moved
    package = tmp_path / "env" / "site-packages" / "streaming"
    package.mkdir(parents=True)
    (package / "online.py").write_text(STREAMER)
    frame = Frame(str(package / "online.py"), 12, "step", "return self.mel.features(chunk)", "streaming")
    found = detect(Code.of([frame]))
    assert found["model-never-moved"] == (
        "online.py:8: `self.mel` is built here, never moved, and called on moved data at online.py:12",
    )
    moved = STREAMER.replace("MelSpectrogram(n_mels=80)", "MelSpectrogram(n_mels=80).to(encoder.device)")
    (package / "placed.py").write_text(moved)  # another file: a run reads each file once
    placed = Frame(str(package / "placed.py"), 12, "step", "return self.mel.features(chunk)", "streaming")
    assert "model-never-moved" not in detect(Code.of([placed]))
