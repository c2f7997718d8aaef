from __future__ import annotations

from fixer.parse import Frame
from fixer.source import user_scopes

SCRIPT = """\
import torch


class Scores(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(1)

    def forward(self, x):
        mask = torch.triu(torch.ones(3, 3))
        return x.masked_fill(mask, 0.0)


model = Scores().to("cuda")
model.out = torch.nn.Linear(3, 3)
model(torch.randn(3, 3, device="cuda"))
"""


def _frame(path, line, library=None):
    return Frame(path=str(path), line=line, function="f", code=None, library=library)


def test_function_and_class_around_a_frame_are_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    scopes = user_scopes([_frame(script, 11)])
    assert scopes[0].startswith("    def forward") and "torch.triu(torch.ones(3, 3))" in scopes[0]
    assert scopes[1].startswith("class Scores") and "self.scale = torch.ones(1)" in scopes[1]


def test_a_script_frame_sees_the_module_up_to_the_failing_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    (scope,) = user_scopes([_frame(script, 15)])
    assert scope.endswith("model.out = torch.nn.Linear(3, 3)")
    assert "model(torch.randn" not in scope


def test_library_missing_unparsable_and_non_python_files_give_nothing(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    notes = tmp_path / "notes.txt"
    notes.write_text(SCRIPT)
    frames = [
        _frame(tmp_path / "missing.py", 3),
        _frame(broken, 1),
        _frame(notes, 11),
        _frame(tmp_path / "train.py", 11, library="torch.nn"),
    ]
    assert user_scopes(frames) == ()
