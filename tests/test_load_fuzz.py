"""`forge.load` on corrupted saved directories: a `LoadError` naming the file, or a model that
still matches; never another exception.

A small model (embedding tied to the LM head, an NPU linear, a CPU cumsum, a layer norm) is
compiled and saved once. Each case copies the directory, corrupts it one deterministic way
(files deleted, truncated at many offsets, bytes flipped, meta.json fields removed or retyped,
the IR edited, the safetensors header broken, weights removed or of the wrong shape or dtype,
extra files, an empty directory, a file instead of one) and loads it.

`model.mlir` and `model.safetensors` are covered by checksums in meta.json, so every change
to them is caught ("checked" cases). The same corruptions are also loaded with the checksums
removed from meta.json ("unchecked" cases, as for a hand-edited model): the parser, verifier,
weights reader and emitter must then report the problem themselves; a change they cannot see
(a weight byte flipped, an IR edit that is still a valid program) may load and give other
numbers, but must not raise anything but LoadError.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

import forge
from forge.driver.compile_errors import LoadError

MLIR, WEIGHTS, META = "model.mlir", "model.safetensors", "meta.json"
FILES = (MLIR, WEIGHTS, META)


class Tiny(nn.Module):
    """Embedding tied to the LM head (an alias in the store), npu and cpu ops (transfers)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(32, 16)
        self.fc1 = nn.Linear(16, 24)
        self.fc2 = nn.Linear(24, 16)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 32, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.fc1(self.emb(ids)))
        h = torch.cumsum(h, dim=-1) / 24.0
        return self.head(self.norm(self.fc2(h)))


IDS = torch.arange(8).reshape(1, 8) % 32


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, torch.Tensor]:
    directory = tmp_path_factory.mktemp("saved") / "tiny"
    compiled = forge.compile(Tiny(), (IDS,))
    compiled.save(directory)
    return directory, compiled(IDS)


# ============================================================================ corruptions


@dataclass(frozen=True)
class Case:
    id: str
    corrupt: Callable[[Path], None]
    names: str
    """What a LoadError must name (a file name, or '' for the directory itself)."""
    content: bool = True
    """Whether it corrupts model.mlir / model.safetensors (checked and unchecked variants)."""


def _delete(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).unlink()


def _truncate(name: str, fraction: float | int) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        data = (d / name).read_bytes()
        at = fraction if isinstance(fraction, int) else int(len(data) * fraction)
        (d / name).write_bytes(data[: max(0, min(at, len(data) - 1))])

    return corrupt


def _flip(name: str, seed: int) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        data = bytearray((d / name).read_bytes())
        data[random.Random(seed).randrange(len(data))] ^= 0xFF
        (d / name).write_bytes(bytes(data))

    return corrupt


def _edit_meta(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        meta = json.loads((d / META).read_text())
        edit(meta)
        (d / META).write_text(json.dumps(meta))

    return corrupt


def _edit_text(name: str, edit: Callable[[str], str]) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        text = (d / name).read_text()
        changed = edit(text)
        assert changed != text, f"the edit did not change {name}"
        (d / name).write_text(changed)

    return corrupt


def _sub(old: str, new: str, count: int = 1) -> Callable[[str], str]:
    return lambda text: text.replace(old, new, count)


def _lines(edit: Callable[[list[str]], None]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        lines = text.splitlines()
        edit(lines)
        return "\n".join(lines) + "\n"

    return apply


def _op_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if " = buffer." in line or "func.return" in line]


def _delete_line(k: int) -> Callable[[str], str]:
    return _lines(lambda lines: lines.pop(_op_lines("\n".join(lines))[k]))


def _duplicate_line(k: int) -> Callable[[str], str]:
    def edit(lines: list[str]) -> None:
        i = _op_lines("\n".join(lines))[k]
        lines.insert(i, lines[i])

    return _lines(edit)


def _swap_lines(k: int) -> Callable[[str], str]:
    def edit(lines: list[str]) -> None:
        ops = _op_lines("\n".join(lines))
        i, j = ops[k], ops[k + 1]
        lines[i], lines[j] = lines[j], lines[i]

    return _lines(edit)


def _rewrite_weights(edit: Callable[[dict[str, torch.Tensor], dict[str, str]], None]) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        from safetensors import safe_open
        from safetensors.torch import save_file

        with safe_open(str(d / WEIGHTS), framework="pt") as f:
            metadata = dict(f.metadata() or {})
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        edit(tensors, metadata)
        save_file(tensors, str(d / WEIGHTS), metadata=metadata)

    return corrupt


def _first_weight(tensors: dict[str, torch.Tensor], rank: int = 2) -> str:
    return next(k for k, t in tensors.items() if t.dim() == rank)


def _set_header_len(value: int) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        data = (d / WEIGHTS).read_bytes()
        (d / WEIGHTS).write_bytes(struct.pack("<Q", value) + data[8:])

    return corrupt


def _edit_header(edit: Callable[[str], str]) -> Callable[[Path], None]:
    """Edit the JSON header of the safetensors file, keeping its length field consistent."""

    def corrupt(d: Path) -> None:
        data = (d / WEIGHTS).read_bytes()
        (n,) = struct.unpack("<Q", data[:8])
        header = data[8 : 8 + n].decode()
        new = edit(header).encode()
        assert new != header.encode()
        (d / WEIGHTS).write_bytes(struct.pack("<Q", len(new)) + new + data[8 + n :])

    return corrupt


def _replace_with_dir(name: str) -> Callable[[Path], None]:
    def corrupt(d: Path) -> None:
        (d / name).unlink()
        (d / name).mkdir()

    return corrupt


def _cases() -> list[Case]:
    cases: list[Case] = []
    for name in FILES:
        content = name != META
        cases.append(Case(f"delete-{name}", _delete(name), name, content))
        for at in (0, 1, 7, 8, 9, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99):
            cases.append(Case(f"truncate-{name}-{at}", _truncate(name, at), name, content))
        for seed in range(12 if name != META else 8):
            cases.append(Case(f"flip-{name}-{seed}", _flip(name, seed), name, content))
        cases.append(Case(f"dir-instead-of-{name}", _replace_with_dir(name), name, content))

    # meta.json: every field removed and retyped; the inputs' entries broken.
    for key in ("format", "runtime", "device", "inputs", "report", "files"):
        cases.append(Case(f"meta-remove-{key}", _edit_meta(lambda m, k=key: m.pop(k)), META, False))
        for kind, value in (("null", None), ("int", 7), ("str", "x"), ("list", [1]), ("dict", {"a": 1})):
            cases.append(
                Case(f"meta-{key}-{kind}", _edit_meta(lambda m, k=key, v=value: m.__setitem__(k, v)), META, False)
            )
    for field in ("name", "shape", "dtype"):
        cases.append(
            Case(f"meta-input-remove-{field}", _edit_meta(lambda m, f=field: m["inputs"][0].pop(f)), META, False)
        )
        for kind, value in (("null", None), ("int", 3), ("list", ["a"])):
            cases.append(
                Case(
                    f"meta-input-{field}-{kind}",
                    _edit_meta(lambda m, f=field, v=value: m["inputs"][0].__setitem__(f, v)),
                    META,
                    False,
                )
            )
    for case_id, edit in (
        ("inputs-empty", lambda m: m.__setitem__("inputs", [])),
        ("inputs-extra", lambda m: m["inputs"].append(dict(m["inputs"][0]))),
        ("input-shape-other", lambda m: m["inputs"][0].__setitem__("shape", [1, 9])),
        ("input-shape-rank", lambda m: m["inputs"][0].__setitem__("shape", [8])),
        ("input-shape-negative", lambda m: m["inputs"][0].__setitem__("shape", [1, -8])),
        ("input-shape-float", lambda m: m["inputs"][0].__setitem__("shape", [1, 8.5])),
        ("input-dtype-unknown", lambda m: m["inputs"][0].__setitem__("dtype", "torch.nonsense")),
        ("input-dtype-not-a-dtype", lambda m: m["inputs"][0].__setitem__("dtype", "torch.nn")),
        ("input-dtype-other", lambda m: m["inputs"][0].__setitem__("dtype", "torch.float32")),
        ("runtime-unknown", lambda m: m.__setitem__("runtime", "tpu")),
        ("device-unknown", lambda m: m.__setitem__("device", "QPU")),
        ("format-other", lambda m: m.__setitem__("format", "forge-compiled-model/99")),
        ("files-checksum-other", lambda m: m["files"].__setitem__(MLIR, "0" * 64)),
        ("files-unknown-file", lambda m: m["files"].__setitem__("other.bin", "0" * 64)),
        ("files-checksum-int", lambda m: m["files"].__setitem__(WEIGHTS, 5)),
    ):
        cases.append(Case(f"meta-{case_id}", _edit_meta(edit), META, False))
    cases.append(Case("meta-not-an-object", lambda d: (d / META).write_text("[1, 2]"), META, False))
    cases.append(Case("meta-not-utf8", lambda d: (d / META).write_bytes(b"\xff\xfe{}"), META, False))
    cases.append(Case("meta-nan", lambda d: (d / META).write_text('{"format": NaN}'), META, False))

    # The IR: edits that break it, and edits that keep it parseable but wrong.
    ir_edits: list[tuple[str, Callable[[str], str]]] = [
        ("empty", lambda t: ""),
        ("garbage-appended", lambda t: t + "\n%% not mlir\n"),
        ("no-function", lambda t: "builtin.module {\n}\n"),
        ("unknown-weight", _sub('buffer.weight "', 'buffer.weight "no.such.', 1)),
        ("weight-shape", _sub("tensor<32x16xf32>", "tensor<16x32xf32>", 1)),
        ("buffer-too-small", _sub("!buffer.buf<0, npu, ", "!buffer.buf<0, npu, 1", 1)),
        ("buffer-id-clash", _sub("!buffer.buf<1,", "!buffer.buf<0,", 1)),
        ("unknown-kind", _sub("buffer.exec npu linear", "buffer.exec npu linearx", 1)),
        ("device-swap", _sub("buffer.exec npu linear", "buffer.exec cpu linear", 1)),
        ("cumsum-on-npu", _sub("buffer.exec cpu cumsum", "buffer.exec npu cumsum", 1)),
        ("input-index", _sub("buffer.input 0", "buffer.input 3", 1)),
        ("input-type", _sub("buffer.input 0 : tensor<1x8xi64>", "buffer.input 0 : tensor<1x8xi32>", 1)),
        ("func-renamed", _sub("@forward", "@backward", 1)),
        ("func-arg-type", _sub("(%ids: tensor<1x8xi64>)", "(%ids: tensor<1x9xi64>)", 1)),
        ("result-type", _sub("-> tensor<1x8x32xf32> {", "-> tensor<1x8x31xf32> {", 1)),
        ("second-function",
         lambda t: t.replace("func.func @forward", "func.func @other() {\n  func.return\n}\nfunc.func @forward", 1)),
        ("non-utf8", lambda t: t.replace("buffer.alloc", "buffer.\udcffalloc", 1)),
    ]
    ir_edits += [(f"delete-op-{k}", _delete_line(k)) for k in (0, 3, 6, 9, 12, 15, -1)]
    ir_edits += [(f"duplicate-op-{k}", _duplicate_line(k)) for k in (0, 5, 10, -2)]
    ir_edits += [(f"swap-ops-{k}", _swap_lines(k)) for k in (0, 4, 8, 12, -2)]
    for case_id, edit in ir_edits:
        corrupt = _edit_text(MLIR, edit)
        if case_id == "non-utf8":

            def write_escaped(d: Path, e: Callable[[str], str] = edit) -> None:
                (d / MLIR).write_bytes(e((d / MLIR).read_text()).encode("utf-8", "surrogateescape"))

            corrupt = write_escaped
        cases.append(Case(f"ir-{case_id}", corrupt, MLIR))

    # The weights: header, entries, shapes and dtypes.
    weight_edits: list[tuple[str, Callable[[Path], None]]] = [
        ("header-len-huge", _set_header_len(1 << 60)),
        ("header-len-zero", _set_header_len(0)),
        ("header-len-plus-one",
         lambda d: _set_header_len(struct.unpack("<Q", (d / WEIGHTS).read_bytes()[:8])[0] + 1)(d)),
        ("header-dtype", _edit_header(lambda h: h.replace('"F32"', '"F99"', 1))),
        ("header-offsets", _edit_header(lambda h: h.replace('"data_offsets":[0,', '"data_offsets":[4,', 1))),
        ("header-not-json", _edit_header(lambda h: "{" + h[2:])),
        ("header-aliases", _edit_header(lambda h: h.replace('"forge.aliases":"{', '"forge.aliases":"[{', 1))),
        ("header-order",
         _edit_header(
             lambda h: h.replace('"forge.order":"[', '"forge.order":"["x", ', 1).replace('"x", ', '\\"x\\", ', 1)
         )),
        ("header-order-not-names",
         _edit_header(lambda h: re.sub(r'"forge.order":"\[[^]]*\]"', '"forge.order":"[1, {}, 2]"', h, count=1))),
        ("header-format", _edit_header(lambda h: h.replace("forge-weights/1", "forge-weights/7", 1))),
        ("weight-missing", _rewrite_weights(lambda t, m: (t.pop(_first_weight(t)), m.pop("forge.order")))),
        ("weight-bias-missing", _rewrite_weights(lambda t, m: (t.pop(_first_weight(t, 1)), m.pop("forge.order")))),
        ("weight-transposed",
         _rewrite_weights(lambda t, m: t.__setitem__(k := _first_weight(t), t[k].t().contiguous()))),
        ("weight-flattened", _rewrite_weights(lambda t, m: t.__setitem__(k := _first_weight(t), t[k].reshape(-1)))),
        ("weight-float64", _rewrite_weights(lambda t, m: t.__setitem__(k := _first_weight(t), t[k].double()))),
        ("weight-float16", _rewrite_weights(lambda t, m: t.__setitem__(k := _first_weight(t, 1), t[k].half()))),
        ("weight-int64", _rewrite_weights(lambda t, m: t.__setitem__(k := _first_weight(t), t[k].long()))),
        ("weight-extra", _rewrite_weights(lambda t, m: (t.__setitem__("extra", torch.ones(3)), m.pop("forge.order")))),
        ("weights-all-missing", _rewrite_weights(lambda t, m: (t.clear(), m.clear()))),
        ("weight-alias-dropped", _rewrite_weights(lambda t, m: m.__setitem__("forge.aliases", "{}"))),
        ("empty-file", lambda d: (d / WEIGHTS).write_bytes(b"")),
    ]
    for case_id, corrupt in weight_edits:
        cases.append(Case(f"weights-{case_id}", corrupt, WEIGHTS))

    # The directory itself.
    def extra_files(d: Path) -> None:
        (d / "notes.txt").write_text("hello")
        (d / "model.mlir.bak").write_text("garbage")
        (d / "sub").mkdir()

    def empty_dir(d: Path) -> None:
        for name in FILES:
            (d / name).unlink()

    def file_instead_of_dir(d: Path) -> None:
        shutil.rmtree(d)
        d.write_text("not a directory")

    cases += [
        Case("dir-extra-files", extra_files, "", False),
        Case("dir-empty", empty_dir, "", False),
        Case("dir-is-a-file", file_instead_of_dir, "", False),
        Case("dir-missing", lambda d: shutil.rmtree(d), "", False),
    ]
    return cases


CASES = _cases()
VARIANTS = [(c, True) for c in CASES] + [(c, False) for c in CASES if c.content]


def test_enough_corruptions() -> None:
    assert len(VARIANTS) >= 200
    assert len({c.id for c in CASES}) == len(CASES)


def _drop_checksums(d: Path) -> None:
    if (d / META).is_file():
        meta = json.loads((d / META).read_text())
        meta.pop("files", None)
        (d / META).write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("case", "checked"), VARIANTS, ids=[f"{c.id}-{'checked' if k else 'unchecked'}" for c, k in VARIANTS]
)
def test_corrupted_directory(saved, tmp_path: Path, case: Case, checked: bool) -> None:
    source, expected = saved
    directory = tmp_path / "model"
    shutil.copytree(source, directory)
    if not checked:
        _drop_checksums(directory)
    case.corrupt(directory)
    try:
        loaded = forge.load(directory)
    except LoadError as err:
        message = str(err)
        assert case.names in message, f"LoadError does not name {case.names!r}: {message}"
        assert str(directory) in message, message
        return
    # It loaded: then it must be a working model; with checksums, the very same one.
    got = loaded(IDS)
    if checked or not case.content:
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    else:
        assert got.shape == expected.shape


def test_intact_directory_loads_and_matches(saved) -> None:
    source, expected = saved
    torch.testing.assert_close(forge.load(source)(IDS), expected, rtol=0, atol=0)
