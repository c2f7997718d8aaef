"""What the detectors read: the printed failing lines, and the user's files around them when here."""

from __future__ import annotations

import ast

from fixer.explain.detectors import Code, registered
from fixer.explain.parse import Frame

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
    code = SCRIPT.splitlines()[line - 1].strip()
    return Frame(path=str(path), line=line, function="f", code=code, library=library)


def test_the_function_and_class_around_a_frame_are_read(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    (scope,) = Code.of([_frame(script, 11)]).scopes
    assert (scope.function.name, scope.cls.name) == ("forward", "Scores")
    assert [type(s).__name__ for s in scope.before] == ["Assign"]
    assert ast.unparse(scope.failing) == "return x.masked_fill(mask, 0.0)"


def test_a_script_frame_sees_the_module_up_to_the_failing_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    (scope,) = Code.of([_frame(script, 16)]).scopes
    assert scope.function is None and scope.cls is None
    assert ast.unparse(scope.before[-1]) == "model.out = torch.nn.Linear(3, 3)"
    assert scope.moved_before == {"model": 14}
    assert [ast.unparse(c.func) for c in scope.failing_calls] == ["model", "torch.randn"]


def test_printed_lines_are_kept_innermost_first_with_where_and_whose_they_are(tmp_path):
    frames = [
        Frame("train.py", 3, "main", "for x in loader:", None),
        Frame("lib/site-packages/torch/nn/modules/module.py", 9, "f", "return forward(x)", "torch.nn"),
        Frame("model.py", 7, "forward", "return self.head(x) +", None),
    ]
    lines = Code.of(frames).lines
    assert [(line.code, line.user, line.where) for line in lines] == [
        ("return self.head(x) +", True, "model.py:7"),
        ("return forward(x)", False, "module.py:9"),
        ("for x in loader:", True, "train.py:3"),
    ]
    assert lines[0].tree is None and lines[2].tree is not None


def test_a_printed_line_that_begins_a_statement_laid_over_lines_is_read_as_the_whole_statement(tmp_path):
    # The shape of WhisperLiveKit#206 (benchmarks/realcode): Python prints the call's first line only, and the
    # tensor made without a device is an argument two lines below it
    script = tmp_path / "diarize.py"
    script.write_text(
        "import torch\n\n\ndef step(model, features):\n"
        "    state, preds = model.forward_streaming_step(\n"
        "        processed_signal=features,\n"
        "        processed_signal_length=torch.tensor([features.shape[1]]),\n"
        "    )\n"
        "    for chunk in preds:\n"
        "        print(chunk)\n"
        "    return state\n"
    )
    printed = "state, preds = model.forward_streaming_step("
    code = Code.of(
        [Frame(str(script), 5, "step", printed, None), Frame(str(script), 9, "step", "for chunk in preds:", None)]
    )
    whole, loop = code.lines[1], code.lines[0]
    assert whole.code == printed and whole.statement.endswith(
        "processed_signal_length=torch.tensor([features.shape[1]]),\n)"
    )
    assert loop.statement == ""  # a loop's line is the line: its body had no part in the failure
    found = list(registered()["factory-without-device-on-line"].run(code))
    assert found == [f"diarize.py:5: `{printed}`"]
    assert (
        list(registered()["factory-without-device-on-line"].run(Code.of([Frame("x.py", 5, "step", printed, None)])))
        == []
    )


def test_library_missing_unparsable_and_non_python_files_give_no_scope(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    notes = tmp_path / "notes.txt"
    notes.write_text(SCRIPT)
    library = tmp_path / "site-packages" / "train.py"
    library.parent.mkdir()
    library.write_text(SCRIPT)
    frames = [
        Frame(str(tmp_path / "missing.py"), 3, "f", None, None),
        Frame(str(broken), 1, "f", "def f(:", None),
        Frame(str(notes), 11, "f", "return x.masked_fill(mask, 0.0)", None),
        Frame(str(library), 11, "f", "return x.masked_fill(mask, 0.0)", "torch"),
    ]
    assert Code.of(frames).scopes == ()


def test_a_notebook_frame_reads_the_loop_ipython_printed_above_its_failing_line():
    # How IPython prints the repro of submodules-in-plain-container: no file on disk, the cell's lines only.
    printed = ("    def forward(self, x):", "        for block in self.blocks:", "            x = torch.relu(block(x))")
    cell = Frame("Cell In[1]", 13, "Encoder.forward", printed[-1].strip(), None, printed)
    elsewhere = Frame("Cell In[1]", 13, "Encoder.forward", printed[-1].strip(), None, printed[::2])
    loop = registered()["layer-from-loop-over-module"]
    assert list(loop.run(Code.of([cell]))) == ["Cell In[1]:12: `block` is taken from a module attribute"]
    assert list(loop.run(Code.of([elsewhere]))) == []


# The lines IPython printed above the failing call of tensor-created-without-device's notebook exercise.
CELL = (
    '# FakeTensorMode stands in for the GPU: "cuda:0" tensors carry shape and device only.',
    "with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():",
    '    model.to("cuda:0")',
    '    x = torch.randn(2, 5, 8, device="cuda:0")',
    "    model(x)",
)


def test_a_notebook_cells_printed_lines_count_for_what_they_show_and_never_for_what_they_lack():
    cell = Frame("Cell In[1]", 23, "<cell>", "model(x)", None, CELL)
    code = Code.of([cell])
    (shown,) = code.shown
    assert (shown.file, shown.line, shown.failing.lineno) == ("Cell In[1]", 23, 23)
    detectors = registered()
    assert list(detectors["failing-call-args-on-device"].run(code)) == [
        "Cell In[1]:23: `x` (line 22) on a device already"
    ]
    # The model is built above what was printed: that no `.to()` shows is no sign that none ran.
    bare = Code.of([Frame("Cell In[1]", 23, "<cell>", "model(x)", None, CELL[3:])])
    assert list(detectors["model-never-moved"].run(bare)) == []


def test_printed_lines_that_begin_inside_a_statement_are_read_from_the_first_that_parses():
    # IPython's window can open on the tail of a call or on an `else:`.
    tail = ("    **kwargs)", "else:", "    y = model(x)")
    (shown,) = Code.of([Frame("Cell In[2]", 40, "<cell>", "y = model(x)", None, tail)]).shown
    assert shown.failing is not None and shown.failing.lineno == 40
    assert Code.of([Frame("Cell In[2]", 40, "<cell>", "y = f(a,", None, ("y = f(a,",))]).shown == ()


LIBRARY = """\
import torch


def cascade(inputs, steps):
    total = torch.zeros(inputs.shape[0])
    for step in steps:
        inputs, change = step(inputs)
        total += change
    return inputs, total
"""


def test_an_installed_library_s_failing_line_is_read_for_what_it_reads_and_never_as_the_user_s(tmp_path):
    package = tmp_path / "env" / "site-packages" / "flows"
    package.mkdir(parents=True)
    (package / "base.py").write_text(LIBRARY)
    frame = Frame(path=str(package / "base.py"), line=8, function="cascade", code="total += change", library="flows")
    code = Code.of([frame])
    assert code.scopes == () and [scope.line for scope in code.library] == [8]
    found = list(registered()["failing-line-reads-unplaced-factory"].run(code))
    assert found == ["base.py:8: `total` (line 5: `torch.zeros(...)`) made without device="]
    pytorch = Frame(path=str(package / "base.py"), line=8, function="cascade", code="total += change", library="torch")
    assert Code.of([pytorch]).library == ()
