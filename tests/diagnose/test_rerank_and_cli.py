from __future__ import annotations

import json
import subprocess
import sys

from fixer.diagnose.environment import probe_environment
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
    env, build = probe_environment()
    assert env.probe == "env" and env.facts["torch"]
    assert build.entries == ("torch-not-compiled-with-cuda",)
    expected = "confirms" if not env.facts["cuda_build"] and not env.facts["hip_build"] else "rules-out"
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
    assert out["findings"][0]["probe"] == "env"
    assert out["matches"][0]["id"] in {"torch-load-missing-ordinal", "torch-load-without-map-location"}
