"""The collector is held off for a block and left as the caller had it: a process that runs fixer
inside it (the IPython extension, `fixer.install()`) keeps its own setting."""

from __future__ import annotations

import gc

import pytest

from fixer import collector


@pytest.fixture(autouse=True)
def _restored():
    collecting = gc.isenabled()
    yield
    if collecting:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_in_the_block_and_on_again_after():
    gc.enable()
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_blocks_leave_it_off_until_the_outermost_ends():
    gc.enable()
    with collector.paused():
        with collector.paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off():
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_still_turns_it_on_again():
    gc.enable()
    with pytest.raises(ValueError), collector.paused():
        raise ValueError
    assert gc.isenabled()
