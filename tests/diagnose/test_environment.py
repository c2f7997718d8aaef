"""The machine probes' verdicts, from this machine's real facts and the same facts on other machines.

The facts come from the real child-process probe once; the GPU machines are that record with the
device fields a GPU machine reports, since CI has no GPU to read them from.
"""

from __future__ import annotations

import pytest

from fixer.diagnose.environment import environment_findings, read_machine
from fixer.diagnose.probes import PROBES
from fixer.diagnose.provenance import Provenance

# https://github.com/ZQPei/deep_sort_pytorch/issues/51
ORDINAL = (
    "RuntimeError: Attempting to deserialize object on CUDA device 2 but torch.cuda.device_count() is 1. "
    "Please use torch.load with map_location to map your storages to an existing device."
)


@pytest.fixture(scope="module")
def here() -> dict:
    facts = read_machine()
    assert isinstance(facts, dict), facts
    return facts


def _gpus(facts: dict, count: int, **env: str) -> dict:
    names = [f"NVIDIA H100 80GB HBM3 #{i}" for i in range(count)]
    return {**facts, "cuda_build": "12.8", "cuda_available": True, "device_count": count, "devices": names,
            "current_device": 0, "env": {**facts["env"], **env}}  # fmt: skip


def _verdicts(findings: list, entry: str) -> set[str]:
    return {f.verdict for f in findings if entry in f.entries}


def test_every_finding_names_a_known_probe(here, matcher):
    evidence = matcher.explain(ORDINAL).evidence
    for facts in (here, _gpus(here, 1), _gpus(here, 4, CUDA_VISIBLE_DEVICES="1", LOCAL_RANK="3")):
        assert {f.probe for f in environment_findings(facts, evidence)} <= set(PROBES)


def test_this_machine_is_reported_as_it_is(here):
    summary = environment_findings(here)[0]
    assert summary.facts["torch"] == here["torch"]
    assert f"{here['device_count']} GPU(s)" in summary.summary


def test_an_ordinal_past_the_gpu_count_confirms_the_ordinal_causes(here, matcher):
    evidence = matcher.explain(ORDINAL).evidence
    one_gpu = environment_findings(_gpus(here, 1), evidence)
    assert _verdicts(one_gpu, "torch-load-missing-ordinal") == {"confirms"}
    four_gpus = environment_findings(_gpus(here, 4), evidence)
    assert _verdicts(four_gpus, "torch-load-missing-ordinal") == {"rules-out"}


def test_visible_devices_renumber_the_gpus(here, matcher):
    evidence = matcher.explain(ORDINAL).evidence
    findings = environment_findings(_gpus(here, 1, CUDA_VISIBLE_DEVICES="2"), evidence)
    visible = [f for f in findings if f.probe == "env-visible-devices"]
    assert visible[0].verdict == "info" and "sees 1 GPU(s)" in visible[0].summary
    assert visible[1].verdict == "confirms" and "hardcoded-device-ordinal" in visible[1].entries


def test_more_local_ranks_than_gpus(here):
    crowded = environment_findings(_gpus(here, 2, LOCAL_RANK="3", LOCAL_WORLD_SIZE="4"))
    assert _verdicts(crowded, "more-ranks-than-gpus") == {"confirms"}
    fitting = environment_findings(_gpus(here, 4, LOCAL_RANK="3", LOCAL_WORLD_SIZE="4"))
    assert _verdicts(fitting, "more-ranks-than-gpus") == {"rules-out"}


def test_one_gpu_rules_out_the_dataparallel_checks(here):
    findings = environment_findings(_gpus(here, 1))
    assert _verdicts(findings, "dataparallel-params-not-on-device0") == {"rules-out"}
    assert not _verdicts(environment_findings(_gpus(here, 2)), "dataparallel-params-not-on-device0")


def test_missing_libraries_rule_out_their_entries(here):
    without = {**here, "libraries": {}}
    findings = environment_findings(without)
    for entry in ("accelerate-hooks-conflict", "device-map-auto-split", "bnb-quantized-model-to"):
        assert _verdicts(findings, entry) == {"rules-out"}
    with_accelerate = environment_findings({**here, "libraries": {"accelerate": "1.10.0"}})
    assert not _verdicts(with_accelerate, "accelerate-hooks-conflict")


def test_only_a_missing_keras_rules_keras_out_since_a_script_may_set_its_own_backend(here):
    def keras_verdicts(facts: dict) -> set[str]:  # env-cuda has its own say on this entry with one GPU
        return _verdicts([f for f in environment_findings(facts) if f.probe == "env-keras"], "keras-torch-dataparallel")

    assert keras_verdicts({**here, "libraries": {}}) == {"rules-out"}
    unset = {
        **here,
        "libraries": {"keras": "3.11.0"},
        "env": {k: v for k, v in here["env"].items() if k != "KERAS_BACKEND"},
    }
    assert keras_verdicts({**unset, "keras_config_backend": None}) == {"could-not-check"}
    assert not keras_verdicts({**unset, "env": {**unset["env"], "KERAS_BACKEND": "jax"}}) - {"info"}


@pytest.mark.parametrize(
    ("entry", "shown"),
    [("keras-torch-dataparallel", "Dense.call()"), ("accelerate-offloaded-model-moved", "/accelerate/")],
)
def test_a_probe_never_rules_out_what_the_traceback_shows_running(here, catalog, matcher, entry, shown):
    """Real tracebacks from other machines ran through Keras or accelerate, neither installed here."""
    example = next(e.traceback for e in catalog.get(entry).examples if shown in e.traceback)
    findings = environment_findings({**here, "libraries": {}}, matcher.explain(example).evidence)
    assert entry not in {e for f in findings if f.verdict == "rules-out" for e in f.entries}
    assert entry in {
        e for f in environment_findings({**here, "libraries": {}}) if f.verdict == "rules-out" for e in f.entries
    }


def test_old_torch_confirms_fused_step_counters_left_on_the_cpu(here, catalog, matcher):
    fused = next(
        e.traceback for e in catalog.get("optimizer-state-after-resume").examples if "fused_adam" in e.traceback
    )
    evidence = matcher.explain(fused).evidence
    old = environment_findings({**_gpus(here, 1), "torch": "2.0.1+cu118"}, evidence)
    assert ("confirms", "optimizer-state-after-resume") in {(f.verdict, e) for f in old for e in f.entries}
    new = environment_findings({**_gpus(here, 1), "torch": "2.4.0"}, evidence)
    assert "confirms" not in {f.verdict for f in new if f.probe == "env-torch-version"}


def test_facts_that_could_not_be_read_cannot_be_checked():
    findings = environment_findings("importing torch took longer than 60 s")
    assert [(f.probe, f.verdict) for f in findings] == [("env-torch-build", "could-not-check")]


def test_a_machine_without_torch_cannot_be_checked():
    findings = environment_findings({"torch": None, "torch_error": "ModuleNotFoundError: No module named 'torch'"})
    assert [f.verdict for f in findings] == ["could-not-check"]
    assert "No module named 'torch'" in findings[0].summary


def test_a_traceback_from_another_machine_is_not_ruled_out_by_what_this_one_lacks(here):
    lacking = {**here, "libraries": {}}
    ruled_here = {e for f in environment_findings(lacking) if f.verdict == "rules-out" for e in f.entries}
    assert {"accelerate-hooks-conflict", "bnb-quantized-model-to", "keras-torch-dataparallel"} <= ruled_here
    elsewhere = environment_findings(lacking, origin=Provenance(False, "none of the traceback's files is here"))
    assert not {
        e
        for f in elsewhere
        if f.verdict == "rules-out" and f.probe in ("env-libraries", "env-keras")
        for e in f.entries
    }


def _cpu_only(facts: dict) -> dict:
    return {**facts, "cuda_build": None, "hip_build": None, "cuda_available": False, "device_count": 0,
            "devices": [], "mps_available": False}  # fmt: skip


# https://github.com/SamLynnEvans/Transformer/issues/30: tensors on cuda:0 and on the CPU, so a GPU ran it.
ON_A_GPU = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)
# https://github.com/facebookresearch/detectron2/issues/460: raised because the machine running it has no CUDA.
NO_CUDA = "AssertionError: Torch not compiled with CUDA enabled"


def test_a_cpu_machine_confirms_nothing_about_an_error_that_ran_on_a_gpu(here, matcher):
    findings = environment_findings(_cpu_only(here), matcher.explain(ON_A_GPU).evidence)
    decided = [(f.probe, f.verdict, f.entries) for f in findings if f.verdict in ("confirms", "rules-out")]
    assert decided == []
    build = next(f for f in findings if "torch-not-compiled-with-cuda" in f.entries)
    assert build.verdict == "info" and build.summary.startswith("on this machine: ")
    assert build.summary.endswith("(decides nothing about this traceback)")
    assert build.facts["undecided"] == "the error shows a tensor on cuda:0, which this machine does not have"


def test_a_cpu_machine_confirms_the_causes_that_are_about_it(here, matcher):
    findings = environment_findings(_cpu_only(here), matcher.explain(NO_CUDA).evidence)
    assert _verdicts(findings, "torch-not-compiled-with-cuda") == {"confirms"}
    ordinal = environment_findings(_gpus(here, 1), matcher.explain(ORDINAL).evidence)
    assert _verdicts(ordinal, "torch-load-missing-ordinal") == {"confirms"}


@pytest.mark.parametrize(("gpus", "decides"), [(1, False), (2, True)])
def test_a_gpu_the_machine_lacks_makes_its_facts_context(here, matcher, gpus, decides):
    evidence = matcher.explain(ON_A_GPU.replace("cuda:0 and cpu", "cuda:1 and cuda:0")).evidence
    findings = environment_findings(_gpus(here, gpus), evidence)
    assert any(f.verdict in ("confirms", "rules-out") for f in findings) is decides
