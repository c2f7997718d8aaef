from __future__ import annotations

from fixer.output.redact import redact

# The frame lines as a Linux venv, a pyenv install and a Windows venv print them.
TRACE = """\
  File "/home/alice/proj/train.py", line 12, in <module>
  File "/home/alice/proj/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl
  File "/opt/conda/lib/python3.10/dist-packages/accelerate/hooks.py", line 170, in new_forward
  File "C:\\Users\\bob\\venv\\Lib\\site-packages\\torch\\functional.py", line 402, in einsum
"""


def test_home_and_installed_packages_are_redacted():
    out = redact(TRACE, home="/home/alice", package_dirs=())
    assert 'File "HOME:/proj/train.py"' in out
    assert 'File "SITE-PACKAGES:/torch/nn/modules/module.py"' in out
    assert 'File "SITE-PACKAGES:/accelerate/hooks.py"' in out
    assert 'File "SITE-PACKAGES:\\torch\\functional.py"' in out
    assert "alice" not in out and "bob" not in out


def test_a_home_that_is_a_prefix_of_another_name_is_left_alone():
    assert redact("/home/alicex/run.py", home="/home/alice", package_dirs=()) == "/home/alicex/run.py"


def test_this_interpreters_package_folder_is_redacted():
    import torch

    assert redact(torch.__file__, home="/nonexistent").startswith("SITE-PACKAGES:")
