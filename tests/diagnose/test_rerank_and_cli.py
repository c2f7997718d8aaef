from __future__ import annotations

import json
import subprocess
import sys

from fixer.diagnose.environment import environment_findings, read_machine
from fixer.diagnose.findings import Finding
from fixer.diagnose.rerank import rerank

# https://github.com/ZQPei/deep_sort_pytorch/issues/51
ORDINAL = (
    "RuntimeError: Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1. "
    "Please use torch.load with map_location to map your storages to an existing device."
)


def test_confirmed_causes_move_up_and_ruled_out_ones_down(matcher):
    matches = matcher.explain(ORDINAL).matches
    assert [m.id for m in matches[:2]] == ["torch-load-missing-ordinal", "torch-load-without-map-location"]
    findings = [
        Finding("checkpoint-devices", "confirms", "holds CUDA tensors", ("torch-load-without-map-location",)),
        Finding("checkpoint-devices", "rules-out", "names no missing ordinal", ("torch-load-missing-ordinal",)),
    ]
    reranked = rerank(matches, findings)
    assert [m.id for m in reranked[:2]] == ["torch-load-without-map-location", "torch-load-missing-ordinal"]
    assert reranked[0].reasons[0].text.startswith("checkpoint-devices: ")


def test_environment_probe_reports_this_build():
    summary, build = environment_findings(read_machine())[:2]
    assert summary.probe == "env-torch-build" and summary.verdict == "info" and summary.facts["torch"]
    assert build.entries == ("torch-not-compiled-with-cuda",)
    expected = "confirms" if not summary.facts["cuda_build"] and not summary.facts["hip_build"] else "rules-out"
    assert build.verdict == expected


def test_diagnose_command_json(tmp_path):
    trace = tmp_path / "crash.log"
    trace.write_text(ORDINAL + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "fixer", "diagnose", "--traceback", str(trace), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [f["probe"] for f in out["findings"][:2]] == ["traceback-origin", "env-torch-build"]
    assert out["matches"][0]["id"] in {"torch-load-missing-ordinal", "torch-load-without-map-location"}


def _fixer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fixer", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_diagnose_markdown_is_one_details_block_with_paths_redacted(tmp_path):
    import torch

    trace = tmp_path / "crash.log"
    trace.write_text(f'  File "{torch.__file__}", line 1, in <module>\n{ORDINAL}\n')
    done = _fixer("diagnose", "--traceback", str(trace), "--markdown", "--redact")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("<details><summary>fixer diagnose: most likely `torch-load-missing-ordinal`")
    assert out.rstrip().endswith("</details>")
    assert "| `env-torch-build` |" in out and "SITE-PACKAGES:/torch/__init__.py" in out
    assert str(torch.__file__) not in out


def test_diagnose_reads_an_exported_program(tmp_path):
    import torch

    class Shift(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.arange(x.shape[-1], device=x.device)

    program = tmp_path / "shift.pt2"
    torch.export.save(torch.export.export(Shift(), (torch.zeros(3),)), program)
    out = json.loads(_fixer("diagnose", "--exported", str(program), "--json").stdout)
    exported = [f for f in out["findings"] if f["probe"] == "exported-program-devices"]
    assert exported and "arange" in json.dumps(exported[0]["facts"])


def test_diagnose_refuses_missing_files_and_two_output_formats(tmp_path):
    missing = _fixer("diagnose", "--checkpoint", str(tmp_path / "nope.pt"))
    assert missing.returncode == 2 and missing.stderr.startswith("fixer: --checkpoint")
    assert "Traceback" not in missing.stderr
    both = _fixer("diagnose", "--json", "--markdown")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_diagnose_names_the_probes_it_could_not_run_here(tmp_path):
    trace = tmp_path / "crash.log"
    trace.write_text(ORDINAL + "\n")
    out = json.loads(_fixer("diagnose", "--traceback", str(trace), "--json").stdout)
    assert "--checkpoint PATH" in out["not_checked"]["checkpoint-devices"]


def test_diagnose_treats_a_traceback_whose_files_are_elsewhere_as_another_machines(tmp_path):
    """Lightning-AI/pytorch-lightning#19731's fragment: its torch lives on the reporter's machine."""
    trace = tmp_path / "crash.log"
    trace.write_text(
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and "
        "cuda:0! (when checking argument for argument index in method wrapper_CUDA__index_select)\n\n"
        '  File "/home/root/miniforge3/envs/torch2/lib/python3.9/site-packages/torch/nn/functional.py", line 2233, '
        "in embedding\n    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
    )
    done = _fixer("diagnose", "--traceback", str(trace), "--json")
    findings = json.loads(done.stdout)["findings"]
    libraries = [f for f in findings if f["probe"] == "env-libraries" and f["entries"]]
    assert libraries and all(f["verdict"] == "info" and "says nothing about where" in f["summary"] for f in libraries)
