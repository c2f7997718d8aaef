"""Which files a traceback names are the files it saw: only those may be read as its source or patched."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixer.explain.parse import parse
from fixer.patching.targets import Skipped, locate, user_files

SCRIPT = "import torch\n\n\ndef step(model, x):\n    return model(x)\n"
MESSAGE = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def _traceback(path: str, code: str | None = "return model(x)") -> str:
    shown = f"\n    {code}" if code is not None else ""
    return f'Traceback (most recent call last):\n  File "{path}", line 5, in step{shown}\n{MESSAGE}\n'


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    return path


def test_a_file_whose_line_is_the_traceback_code_line_is_a_target(script):
    assert user_files(parse(_traceback(str(script)))) == {script: (5,)}


def test_a_file_whose_line_differs_is_skipped_with_the_reason(script):
    located = locate(parse(_traceback(str(script), code="return model(x.cuda())")))
    assert located.files == {}
    assert located.skipped == (
        Skipped(
            str(script),
            "its line 5 is not the traceback's `return model(x.cuda())`, so it is another file of that name",
        ),
    )


def test_a_line_a_console_wrapped_with_spaces_inside_a_word_is_still_the_printed_line(script):
    # Windows' console pads a long line to its width, so a pasted line shows a run of spaces mid-word
    # (the shape of a real waveglow thread): at the printed number, the line is the same without spaces.
    wrapped = "return mo" + " " * 50 + "del(x)"
    assert user_files(parse(_traceback(str(script), code=wrapped))) == {script: (5,)}


def test_a_line_a_formatter_requoted_and_moved_since_the_run_is_found_where_it_is_now(script):
    # pypots' shape: the reporter's tree was reformatted (quotes, line numbers) against the commit here
    script.write_text("\n" * 12 + SCRIPT.replace("return model(x)", "return model(x, mode='eval')"))
    traceback = _traceback(str(script), code='return model(x, mode = "eval")')
    assert user_files(parse(traceback)) == {script: (17,)}


def test_a_line_that_differs_in_more_than_spacing_and_quotes_is_not_taken(script):
    assert user_files(parse(_traceback(str(script), code="return mo  del(y)"))) == {}


@pytest.mark.parametrize("added", [1, 2, 20])
def test_a_file_edited_since_the_run_is_read_where_its_line_is_now(script, added):
    """A comment or a merge moves the failing line: the file is still the one that ran, read at the line's
    new number, and the move is said."""
    script.write_text("# a comment added after the run\n" * added + SCRIPT)
    located = locate(parse(_traceback(str(script))))
    assert located.files == {script: (5 + added,)}
    assert [str(m) for m in located.moved] == [
        f"the traceback's line 5 is line {5 + added} here: the file changed since the run"
    ]


def test_a_line_moved_further_is_found_in_the_function_the_frame_names(script):
    script.write_text("\n" * 60 + SCRIPT.replace("def step(model, x):\n", "def step(\n    model,\n    x,\n):\n"))
    located = locate(parse(_traceback(str(script))))
    assert located.files == {script: (68,)} and located.moved[0].here == 68


def test_a_line_that_only_repeats_elsewhere_is_not_taken_for_the_failing_one(script):
    """Equally near twice, or far away outside the function the frame names: not anchored."""
    twice = "def step(model, x):\n    return model(x)\n\n\n\n\ndef step(model, x):\n    return model(x)\n"  # lines 2, 8
    script.write_text(twice)
    assert locate(parse(_traceback(str(script)))).files == {}
    script.write_text("\n" * 60 + "def other(model, x):\n    return model(x)\n")
    located = locate(parse(_traceback(str(script))))
    assert located.files == {} and "is not the traceback's" in located.skipped[0].reason


def test_crlf_line_endings_do_not_hide_the_match(script):
    script.write_bytes(SCRIPT.replace("\n", "\r\n").encode())
    assert user_files(parse(_traceback(str(script)))) == {script: (5,)}


def test_an_absolute_path_without_code_lines_is_taken_as_named(script):
    assert user_files(parse(_traceback(str(script), code=None))) == {script: (5,)}


def test_a_relative_path_without_code_lines_cannot_be_checked_and_is_skipped(script):
    located = locate(parse(_traceback("train.py", code=None)))
    assert located.files == {}
    assert located.skipped == (
        Skipped("train.py", "a relative path, and the traceback shows no code line to check that it is this file"),
    )


def test_an_ipython_frame_is_checked_against_its_arrow_line(script):
    text = (
        f"File {script}:5, in step(model, x)\n      3 \n      4 def step(model, x):\n----> 5     return model(x)\n\n"
        f"{MESSAGE}\n"
    )
    assert user_files(parse(f"RuntimeError    Traceback (most recent call last)\n{text}")) == {script: (5,)}


@pytest.mark.parametrize(
    "path",
    [("/" + "d" * 200) * 21 + "/train.py", "/" + "d" * 300 + ".py", "train\x00.py"],
    ids=["longer-than-PATH_MAX", "longer-than-NAME_MAX", "nul-byte"],
)
def test_a_path_no_file_can_have_is_ignored(script, path):
    located = locate(parse(_traceback(path)))
    assert (located.files, located.skipped) == ({}, ())


def test_a_package_installed_with_pip_target_is_a_library_not_user_code(tmp_path, monkeypatch):
    """`pip install --target vendor accelerate` puts accelerate-1.2.0.dist-info beside the package."""
    module = tmp_path / "vendor" / "accelerate" / "hooks.py"
    module.parent.mkdir(parents=True)
    module.write_text(SCRIPT)
    (tmp_path / "vendor" / "accelerate-1.2.0.dist-info").mkdir()
    monkeypatch.chdir(tmp_path)
    located = locate(parse(_traceback(str(module))))
    assert located.files == {}
    assert "part of the installed package accelerate" in located.skipped[0].reason


def test_the_source_of_an_editable_library_is_not_user_code_but_the_project_itself_is(tmp_path, monkeypatch):
    library = tmp_path / "src" / "transformers" / "src" / "transformers" / "modeling_utils.py"
    library.parent.mkdir(parents=True)
    library.write_text(SCRIPT)
    project = tmp_path / "project" / "train.py"
    project.parent.mkdir()
    project.write_text(SCRIPT)
    editable = ((tmp_path / "src" / "transformers", "transformers"), (project.parent, "myproject"))
    monkeypatch.setattr("fixer.patching.targets._editable_sources", lambda: editable)
    monkeypatch.chdir(project.parent)
    assert user_files(parse(_traceback(str(project)))) == {project: (5,)}
    skipped = locate(parse(_traceback(str(library)))).skipped
    assert "part of transformers, installed in editable mode" in skipped[0].reason


def test_installed_libraries_are_targets_only_when_asked_and_torch_never(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    packages = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    for name in ("attacks/cw.py", "torch/functional.py"):
        (packages / name).parent.mkdir(parents=True, exist_ok=True)
        (packages / name).write_text(SCRIPT)
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{packages / "attacks/cw.py"}", line 5, in step\n    return model(x)\n'
        f'  File "{packages / "torch/functional.py"}", line 5, in step\n    return model(x)\n'
        f"{MESSAGE}\n"
    )
    assert locate(parse(text)).files == {}
    assert locate(parse(text), libraries=True).files == {(packages / "attacks/cw.py").resolve(): (5,)}
