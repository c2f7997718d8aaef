from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from fixer.catalog import Catalog, load
from fixer.match import Matcher

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FIXER_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "dev_tracebacks.yaml"
FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        gpus = 0
    for item in items:
        if "cuda" in item.keywords and not gpus:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device"))
        elif "two_gpus" in item.keywords and gpus < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs two CUDA devices, this machine has {gpus}"))


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load(ROOT / "kb", strict=True)


@pytest.fixture(scope="session")
def matcher(catalog: Catalog) -> Matcher:
    return Matcher(catalog)


def corpus_items() -> list[dict]:
    if not CORPUS.exists():
        return []
    return [item for item in yaml.safe_load(CORPUS.read_text()) if item.get("expect")]


def kb_examples() -> list[tuple[str, int, str]]:
    """(entry id, example number, traceback) for every example in the KB, for parametrised tests."""
    cases = []
    for path in sorted((ROOT / "kb").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for number, example in enumerate(data.get("examples", []), 1):
            cases.append((data["id"], number, example["traceback"]))
    return cases
