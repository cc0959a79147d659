"""OpenVINO CPU settings of a precision mode (`runtime_properties`) and the thread/stream settings Forge's
segments and the benchmark's OpenVINO peer share (`peer_properties`).

`runtime_properties(precision, weights, threads)` sets the threads and streams explicitly: one stream,
`cores` inference threads, the LATENCY hint (what OpenVINO picks on its own for one request on
this machine) and no core pinning (as ONNX Runtime and torch run here). f32 is pinned explicitly:
OpenVINO's CPU default on AMX/AVX512-BF16 machines is bf16.
"""

from __future__ import annotations

import os
from typing import Any

from forge.precision import DEFAULT_PRECISION, check_precision


def cores() -> int:
    """The logical cores this process may run on (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_OV_PRECISION = {"f32": "f32", "bf16": "bf16", "f16": "f16"}


def peer_properties(threads: int | None = None) -> dict[str, Any]:
    """Thread/stream settings, the same for Forge's segments and the OpenVINO peer.

    `ENABLE_CPU_PINNING` False: OpenVINO's CPU plugin pins its threads to cores by default (LATENCY
    hint, Linux), ONNX Runtime with an explicit intra-op thread count and torch's OpenMP do not; on a
    shared machine a pinned thread waits for its busy core while unpinned ones move (ResNet-50, 40
    interleaved random-order rounds, load 6.4: OpenVINO f32 pinned 163.5 ms, unpinned 144.8 ms; GPT-2
    12L, 30 rounds, load 7-8: 571 vs 544 ms). Every system places its threads the same way: unpinned.

    `TBB_PARTITIONER` AUTO (the plugin's default here is STATIC: each parallel region split evenly up front, so
    a region waits for its slowest thread; AUTO lets the other thread take over the rest). OpenVINO's own
    graphs, STATIC vs AUTO, interleaved, load 1.1-1.8, paired AUTO/STATIC: ResNet-50 0.884 (40 rounds) and
    0.961 (60), GPT-2 12L 0.976, Llama 0.980, BERT 0.975 (30 rounds each)."""
    return {"INFERENCE_NUM_THREADS": threads or cores(), "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY",
            "ENABLE_CPU_PINNING": False, "TBB_PARTITIONER": "AUTO"}


DYNAMIC_QUANTIZATION_GROUP = 128
"""`activations="int8"`: the group (input channels per scale) of OpenVINO's dynamic quantization of a
compressed-weight matmul's input rows (int4 weights are grouped by 128 along K too). Generator prefill, prompt
128, int8 weights, 2-core AMD EPYC, in-process A/B of group sizes: GPT-2 12L 149 ms unquantized, 69 / 59 / 58 ms
at groups 32 (the CPU plugin's default) / 128 / 256; the zoo's Llama 95 / 78 / 73 ms, its logits' error against
eager 4.9% / 5.3% / 4.7% of the largest (int8 weights alone: most of it). A decode step at one row measured
slower quantized (GPT-2 8.2 -> 9.3 ms), so a graph whose compressed matmuls have one row keeps float activations."""


def runtime_properties(precision: str = DEFAULT_PRECISION, weights: str | None = None,
                       threads: int | None = None) -> dict[str, Any]:
    """OpenVINO CPU `compile_model` properties of a mode: precision hint, threads, streams, and for
    weight-only quantization no dynamic quantization of the activations (they stay float)."""
    props: dict[str, Any] = {"INFERENCE_PRECISION_HINT": _OV_PRECISION[check_precision(precision)]}
    props.update(peer_properties(threads))
    if weights is not None:
        props["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = 0
    return props
