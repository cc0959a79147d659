"""Shared fixtures: small zoo models are exported once per session (export dominates test time)."""

from __future__ import annotations

import dataclasses
import functools
import os

import pytest
import torch

from forge.models import ATTN_IMPLS, CORE_ZOO, build_model, example_inputs

SEQ_LEN = 16
# The pass-level tests sweep the original three; every zoo family: tests/compiler/test_zoo_families.py.
ZOO_CASES = [(name, attn) for name in CORE_ZOO for attn in ATTN_IMPLS]


@functools.cache
def small_model(name: str, attn: str):
    """A small zoo model, its example input, and its eager output."""
    model = build_model(name, attn=attn, small=True)
    inputs = example_inputs(name, seq_len=SEQ_LEN, small=True)
    with torch.no_grad():
        expected = model(*inputs)
    return model, inputs, expected


def imported_small_model(name: str, attn: str):
    """The imported IR of a small zoo model, a copy of its own per call (the module cloned, the weight
    store copied): a test that folds into it cannot change what the next test sees, whatever the order."""
    imported, inputs, expected = _imported_small_model(name, attn)
    from forge.testing.check import copy_weights

    copy = dataclasses.replace(imported, module=imported.module.clone(), weights=copy_weights(imported.weights),
                               stats=dict(imported.stats))
    return copy, inputs, expected


@functools.cache
def _imported_small_model(name: str, attn: str):
    from forge.frontend.fx_importer import import_module

    model, inputs, expected = small_model(name, attn)
    return import_module(model, inputs), inputs, expected


@pytest.fixture(params=ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def zoo_case(request):
    return request.param


def require_runtime(name: str) -> None:
    """Skip the test when runtime `name` is not installed; with FORGE_REQUIRE_NNFACTORY=1 (CI, after
    `make nnfactory`) its absence is a failure instead."""
    from backends.nnfactory.runtime import available_runtimes, intel_runtime

    if name not in available_runtimes():
        reason = f"{name} runtime not installed: {intel_runtime._missing()}; run scripts/install_nnfactory.sh"
        if os.environ.get("FORGE_REQUIRE_NNFACTORY") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
