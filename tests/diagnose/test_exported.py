"""The exported-program probe on real torch.export.save files, including ones captured as a GPU machine would."""

from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fixer.diagnose.exported import ExportedProgramError, exported_findings, read_program

NO_GPU = {"torch": "2.13.0", "cuda_available": False, "device_count": 0}
ONE_GPU = {"torch": "2.13.0", "cuda_available": True, "device_count": 1}
ENTRY = "exported-program-hardcoded-device"


class Positions(torch.nn.Module):
    """Creates tensors in forward from x.device: torch.export writes that device into the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(x.shape[0], 8, device=x.device)
        return self.proj(x) + mask + torch.arange(8, device=x.device, dtype=x.dtype)


class Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.scale


class Constants(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("shift", torch.ones(8), persistent=False)
        self.table = torch.ones(8)  # a plain tensor attribute: exported as a tensor constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.shift + self.table


def _fake_cuda_parameters(module: torch.nn.Module) -> None:
    """Stand-ins for parameters on cuda:0 (a CPU build cannot hold real ones); saved as metadata only."""
    for owner in module.modules():
        for name, param in list(owner._parameters.items()):
            assert param is not None
            owner._parameters[name] = torch.nn.Parameter(torch.empty(param.shape, device="cuda:0"), requires_grad=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each program exported and saved once for the module: export takes most of this file's time."""
    root = tmp_path_factory.mktemp("pt2")
    paths = {name: root / f"{name}.pt2" for name in ("cpu", "moved", "cuda", "plain", "constants")}
    x = torch.randn(2, 8)
    torch.export.save(torch.export.export(Positions(), (x,)), paths["cpu"])
    torch.export.save(torch.export.export(Plain(), (x,)), paths["plain"])
    torch.export.save(torch.export.export(Constants(), (x,)), paths["constants"])
    # Exported on the CPU, weights then moved to cuda:0 before saving: what `.to("cuda")` does to a program.
    moved = torch.export.export(Positions(), (x,))
    with FakeTensorMode(allow_non_fake_inputs=True):
        for key, value in list(moved.state_dict.items()):
            moved.state_dict[key] = torch.nn.Parameter(torch.empty(value.shape, device="cuda:0"), requires_grad=False)
        torch.export.save(moved, paths["moved"])
    # Captured on cuda:0, as on a GPU machine: fake tensors carry the device without a CUDA build.
    with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad():
        module = Positions()
        _fake_cuda_parameters(module)
        torch.export.save(torch.export.export(module, (torch.randn(2, 8, device="cuda:0"),)), paths["cuda"])
    return paths


def _verdicts(findings: list) -> set[tuple[str, str]]:
    return {(f.verdict, e) for f in findings for e in f.entries}


def test_a_program_exported_on_cpu_reports_the_devices_baked_into_its_graph(files):
    program = read_program(files["cpu"])
    assert program.graph == {"zeros": ["cpu"], "arange": ["cpu"]}
    assert program.weights == {"proj.weight": "cpu", "proj.bias": "cpu"}
    assert program.inputs == {"x": "cpu"}
    info = exported_findings(files["cpu"], None)[0]
    assert info.verdict == "info"
    assert "cpu at 2 node(s) (zeros, arange)" in info.summary
    assert info.facts["weights"] == {"cpu": 2}


def test_a_cpu_program_confirms_on_a_gpu_machine_and_stays_neutral_on_a_cpu_one(files):
    assert ("confirms", ENTRY) in _verdicts(exported_findings(files["cpu"], ONE_GPU))
    assert _verdicts(exported_findings(files["cpu"], NO_GPU)) == set()
    assert _verdicts(exported_findings(files["cpu"], None)) == set()


def test_weights_moved_away_from_the_graph_device_confirm_the_entry(files):
    findings = exported_findings(files["moved"], None)
    assert ("confirms", ENTRY) in _verdicts(findings)
    assert findings[0].facts["weights"] == {"cuda:0": 2}
    assert "pins cpu in its graph while its weights are on cuda:0" in findings[-1].summary


def test_a_program_captured_on_cuda_confirms_only_where_cuda_is_missing(files):
    assert read_program(files["cuda"]).graph == {"zeros": ["cuda:0"], "arange": ["cuda:0"]}
    assert ("confirms", ENTRY) in _verdicts(exported_findings(files["cuda"], NO_GPU))
    assert _verdicts(exported_findings(files["cuda"], ONE_GPU)) == set()


def test_a_program_pinned_to_one_of_the_two_devices_the_error_names_confirms_on_any_machine(files):
    """chai-lab#63's shape: captured on cuda:0, run on cuda:1 of a machine that has both."""
    two_gpus = {**ONE_GPU, "device_count": 2}
    assert _verdicts(exported_findings(files["cuda"], two_gpus)) == set()
    pinned = exported_findings(files["cuda"], two_gpus, ("cuda:1", "cuda:0"))
    assert ("confirms", ENTRY) in _verdicts(pinned)
    assert "run on cuda:1, its baked-in tensors stayed on cuda:0" in pinned[-1].summary
    assert _verdicts(exported_findings(files["cuda"], two_gpus, ("cuda:1", "cpu"))) == set()


def test_a_program_that_names_no_device_rules_out_the_entry(files):
    assert read_program(files["plain"]).graph == {}
    assert _verdicts(exported_findings(files["plain"], ONE_GPU)) == {("rules-out", ENTRY)}


def test_tensor_constants_stay_with_the_graph_and_non_persistent_buffers_go_with_the_weights(files):
    program = read_program(files["constants"])
    assert program.constants == {"table": "cpu"}
    assert program.weights == {"shift": "cpu"}
    assert ("confirms", ENTRY) in _verdicts(exported_findings(files["constants"], ONE_GPU))


def test_an_archive_in_the_older_zip_format_is_read_through_the_checkpoint_unpickler(files, tmp_path, monkeypatch):
    """Older torch.export.save wrote the graph JSON and a nested torch.save state dict at the top of the zip."""
    with zipfile.ZipFile(files["cpu"]) as archive:
        graph = archive.read("cpu/models/model.json")
    monkeypatch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
    state = tmp_path / "state.pt"
    torch.save({"proj.weight": torch.nn.Parameter(torch.zeros(8, 8)), "proj.bias": torch.zeros(8)}, state)
    path = tmp_path / "old.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("serialized_exported_program.json", graph)
        archive.write(state, "serialized_state_dict.pt")
        archive.writestr("version", "5.1")
    assert read_program(path).weights == {"proj.weight": "cuda:0", "proj.bias": "cuda:0"}
    assert ("confirms", ENTRY) in _verdicts(exported_findings(path, None))


class _Payload:
    def __reduce__(self) -> tuple:
        return (os.system, ("touch pwned",))


def test_reading_never_runs_code_from_the_file(files, tmp_path, monkeypatch):
    """torch.export.load would pickle.loads an opaque constant and torch.load a legacy weights file."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pt2"
    with zipfile.ZipFile(files["plain"]) as source, zipfile.ZipFile(path, "w") as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("model_constants_config.json"):
                config = json.loads(data)
                config["config"]["hook"] = {"path_name": "opaque_obj_0", "is_param": False, "use_pickle": True}
                data = json.dumps(config).encode()
            if not info.filename.endswith("model_weights_config.json"):
                archive.writestr(info.filename.replace("plain/", "evil/"), data)
        archive.writestr("evil/data/constants/opaque_obj_0", pickle.dumps(_Payload()))
        archive.writestr("evil/data/weights/model.pt", _torch_save_zip(pickle.dumps({"proj.weight": _Payload()})))
    findings = exported_findings(path, None)
    assert not (tmp_path / "pwned").exists()
    assert findings[0].facts["weights"] == {}


def _torch_save_zip(payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", payload)
    return buffer.getvalue()


def _truncated(files: dict[str, Path], tmp_path: Path) -> Path:
    data = files["cpu"].read_bytes()
    path = tmp_path / "truncated.pt2"
    path.write_bytes(data[: len(data) // 2])
    return path


def _checkpoint(files: dict[str, Path], tmp_path: Path) -> Path:
    path = tmp_path / "last.pt"
    torch.save({"model": {"w": torch.zeros(2)}}, path)
    return path


def _text(files: dict[str, Path], tmp_path: Path) -> Path:
    path = tmp_path / "notes.pt2"
    path.write_text("hello")
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (_text, "not a zip archive"),
        (_truncated, "not a zip archive, or a damaged one"),
        (_checkpoint, "a torch.save checkpoint, not an exported program"),
        (lambda files, tmp_path: tmp_path / "missing.pt2", "cannot read"),
        (lambda files, tmp_path: tmp_path, "cannot read"),
    ],
)
def test_files_that_are_not_exported_programs_could_not_be_checked(files, tmp_path, make, reason):
    path = make(files, tmp_path)
    with pytest.raises(ExportedProgramError, match=reason):
        read_program(path)
    (finding,) = exported_findings(path, ONE_GPU)
    assert finding.verdict == "could-not-check"
    assert "\n" not in finding.summary
