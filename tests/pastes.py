"""Real shapes a device error reaches fixer in that no thread quotes whole: what is printed after a
crash, rich.traceback's box, made here by rich itself around a real error, and a real traceback
word-wrapped as a mail client sends it.

Shared by tests/explain/test_parse.py (the parser reads them as Python printed them),
tests/explain/test_properties.py and tests/test_paste_box.py (the site's JavaScript port reads them alike).
"""

from __future__ import annotations

import importlib.util
import io
import textwrap
from pathlib import Path

# What launchers and the interpreter print after a crash: torchrun's report as the log in
# https://github.com/NotACracker/COTR/issues/15 shows it (its frames and report verbatim, under the header
# line Python prints above them), Python's note on an exception at shutdown, a last log line.
TORCHRUN_REPORT = """\
Traceback (most recent call last):
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/launch.py", line 193, in <module>
    main()
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/launch.py", line 189, in main
    launch(args)
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/launch.py", line 174, in launch
    run(args)
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/run.py", line 710, in run
    elastic_launch(
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/launcher/api.py", line 131, in __call__
    return launch_agent(self._config, self._entrypoint, list(args))
  File "/opt/conda/envs/cotr/lib/python3.8/site-packages/torch/distributed/launcher/api.py", line 259, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\x20
============================================================
tools/train_occ.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-07-05_11:44:10
  host      : 841d68780d16
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 49992)
  error_file: <N/A>
"""
SHUTDOWN_NOTE = """\
Exception ignored in: <module 'threading' from '/usr/lib/python3.10/threading.py'>
Traceback (most recent call last):
  File "/usr/lib/python3.10/threading.py", line 1567, in _shutdown
    lock.acquire()
KeyboardInterrupt
"""
AFTER_A_CRASH = [TORCHRUN_REPORT, SHUTDOWN_NOTE, "done\n", "Epoch 3 finished\n"]

# Lines no terminal wrapped, thousands of characters long: a known message at the end of a log line,
# with the log going on under it, and a message cut short and run on into thousands of words.
LONG_LINE_MESSAGE = "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"
LONG_LINES = [
    'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    y = conv(x)\n'
    f"RuntimeError: {'step ' * 1000}{LONG_LINE_MESSAGE}\nepoch 2 done\n",
    "RuntimeError: deserialize object on a CUDA device but torch.cuda.is_available() is"
    + " torch.cuda.FloatTensor" * 3000
    + "\n",
]


def word_wrapped(text: str, width: int) -> str:
    """The text as a mail client sends it: each line broken at the last space before `width`."""
    return "\n".join(
        piece
        for line in text.splitlines()
        for piece in (textwrap.wrap(line, width, break_on_hyphens=False, drop_whitespace=False) or [""])
    )


def rich_traceback(width: int, *, locals_: bool) -> tuple[str, BaseException]:
    """A real rich.traceback of a real device error, as Lightning or typer print one."""
    import torch
    from rich.console import Console
    from rich.traceback import Traceback
    from torch._subclasses.fake_tensor import FakeTensorMode

    def forward_through_a_layer_with_a_rather_long_name(weight: torch.Tensor) -> torch.Tensor:
        with FakeTensorMode(allow_non_fake_inputs=True):
            return torch.nn.functional.linear(torch.ones(2, 4).to("cuda:0"), weight)

    try:
        forward_through_a_layer_with_a_rather_long_name(torch.ones(4, 4))
    except RuntimeError as exc:
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(Traceback(show_locals=locals_))
        return out.getvalue(), exc
    raise AssertionError("the mismatch did not raise")


def rich_boxes(width: int, depths: range) -> list[tuple[str, BaseException]]:
    """A real error raised three calls deep in a module written under the working directory, boxed by
    rich at `width`, once for each length of folder name: each frame's `path:line in function` then
    meets the box's edge at every place it can, however long the working directory's path."""
    from rich.console import Console
    from rich.traceback import Traceback

    boxes = []
    for depth in depths:
        module = Path("m" * depth) / "layers_of_the_model.py"
        module.parent.mkdir(exist_ok=True)
        module.write_text(
            "def project(x):\n"
            '    raise RuntimeError("Expected all tensors to be on the same device, '
            'but found at least two devices, cuda:0 and cpu!")\n\n\n'
            "def attention_block_forward(x):\n    return project(x)\n\n\n"
            "def forward(x):\n    return attention_block_forward(x)\n"
        )
        spec = importlib.util.spec_from_file_location(f"layers_{depth}", module)
        assert spec is not None and spec.loader is not None
        layers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(layers)
        try:
            layers.forward(None)
        except RuntimeError as exc:
            boxed = Traceback.from_exception(type(exc), exc, exc.__traceback__)
            out = io.StringIO()
            Console(file=out, width=width, color_system=None).print(boxed)
            boxes.append((out.getvalue(), exc))
    return boxes
