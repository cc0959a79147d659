"""WeightStore: tied-weight deduplication, fresh constants, and the .mlir + .safetensors pair."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file

from forge.driver.registry import make_context
from forge.models import build_model, example_inputs
from forge.weights import (
    WeightsError,
    WeightStore,
    attach_weights_loader,
    check_weights_file,
    companion_weights_path,
    load_module,
    pending_weights_loader,
    save_module,
    weights_of,
)

WTE = "hf.transformer.wte.weight"
LM_HEAD = "hf.lm_head.weight"


@pytest.fixture(scope="module")
def gpt2() -> torch.nn.Module:
    return build_model("gpt2", small=True)


def _assert_same_store(a: WeightStore, b: WeightStore) -> None:
    assert a.names() == b.names()
    assert a.aliases == b.aliases
    for name in a.names():
        assert a[name].dtype == b[name].dtype
        assert a[name].shape == b[name].shape
        assert torch.equal(a[name], b[name]), name


# -- deduplication ------------------------------------------------------------------------------


def test_gpt2_tied_weights_collapse_from_named_parameters(gpt2: torch.nn.Module) -> None:
    named = list(gpt2.named_parameters(remove_duplicate=False))
    store = WeightStore()
    ir_names = store.add_all(named)
    assert len(named) == len(list(gpt2.parameters())) + 1
    assert len(store) == len(named) - 1
    assert ir_names[LM_HEAD] == WTE
    assert LM_HEAD not in store.names()
    assert store.aliases == {LM_HEAD: WTE}
    assert store.resolve(LM_HEAD) == WTE and store.resolve(WTE) == WTE
    assert LM_HEAD in store
    assert store[LM_HEAD] is store[WTE]
    assert store.nbytes == sum(p.numel() * 4 for p in gpt2.parameters())


def test_gpt2_tied_weights_collapse_from_state_dict(gpt2: torch.nn.Module) -> None:
    store = WeightStore()
    store.add_all(gpt2.state_dict().items())
    assert store.aliases == {LM_HEAD: WTE}
    assert len(store) == len(gpt2.state_dict()) - 1


def test_gpt2_tied_weights_collapse_from_exported_program(gpt2: torch.nn.Module) -> None:
    # torch.export lists both tied names as parameter inputs; the store sees one tensor.
    ep = torch.export.export(gpt2, example_inputs("gpt2", seq_len=8, small=True))
    store = WeightStore()
    names = store.add_all(ep.state_dict.items())
    assert names[LM_HEAD] == names[WTE] == WTE
    assert len(store) == len(ep.state_dict) - 1


def test_untied_llama_has_no_aliases() -> None:
    llama = build_model("llama", small=True)
    store = WeightStore()
    store.add_all(llama.named_parameters(remove_duplicate=False))
    store.add_all(llama.named_buffers(remove_duplicate=False))
    assert store.aliases == {}
    assert len(store) == len(list(llama.parameters())) + len(list(llama.buffers()))


def test_views_are_not_aliases() -> None:
    base = torch.arange(12.0)
    store = WeightStore()
    assert store.add("full", base) == "full"
    assert store.add("reshaped", base.view(3, 4)) == "reshaped"  # same bytes, other shape
    assert store.add("tail", base[6:]) == "tail"  # other offset
    assert store.add("again", base) == "full"  # same everything
    assert store.add("copy", base.clone()) == "copy"  # equal values, other storage
    assert len(store) == 4 and store.aliases == {"again": "full"}


def test_empty_tensors_are_never_merged() -> None:
    store = WeightStore()
    assert store.add("a", torch.empty(0)) == "a"
    assert store.add("b", torch.empty(0)) == "b"
    assert store.add("a", torch.empty(0)) == "a"


def test_name_clash_with_different_data_is_an_error() -> None:
    store = WeightStore()
    t = torch.ones(2)
    store.add("w", t)
    assert store.add("w", t) == "w"
    with pytest.raises(ValueError, match="'w'"):
        store.add("w", torch.zeros(2))
    with pytest.raises(KeyError, match="nope"):
        store.resolve("nope")


def test_constants_get_fresh_unique_names() -> None:
    store = WeightStore()
    store.add("const_0", torch.zeros(1))
    a = store.add_constant(torch.ones(2))
    b = store.add_constant(torch.ones(2))
    c = store.add_constant(torch.ones(2), prefix="folded")
    assert len({"const_0", a, b, c}) == 4
    assert a.startswith("const_") and c.startswith("folded_")
    assert store.fresh_name("const") not in store
    assert store.nbytes == 4 + 3 * 8


# -- persistence --------------------------------------------------------------------------------


def test_save_load_round_trip_keeps_values_order_and_aliases(
    gpt2: torch.nn.Module, tmp_path: Path
) -> None:
    store = WeightStore()
    store.add_all(gpt2.named_parameters(remove_duplicate=False))
    store.add_constant(torch.tensor([1, 2, 3], dtype=torch.int64))
    store.add("transposed", torch.arange(6.0).view(2, 3).t())  # non-contiguous
    path = store.save(tmp_path / "w.safetensors")
    loaded = WeightStore.load(path)
    _assert_same_store(store, loaded)
    assert loaded.resolve(LM_HEAD) == WTE
    assert torch.equal(loaded[LM_HEAD], gpt2.hf.lm_head.weight.detach())
    # Saving over the file a store was loaded from works.
    loaded.save(path)
    _assert_same_store(store, WeightStore.load(path))


def test_tied_data_is_written_once(gpt2: torch.nn.Module, tmp_path: Path) -> None:
    tied, untied = WeightStore(), WeightStore()
    wte = gpt2.hf.transformer.wte.weight
    tied.add("a", wte)
    tied.add("b", wte)
    untied.add("a", wte)
    untied.add("b", wte.detach().clone())
    size_tied = tied.save(tmp_path / "tied.safetensors").stat().st_size
    size_untied = untied.save(tmp_path / "untied.safetensors").stat().st_size
    assert size_untied - size_tied >= wte.numel() * 4


def test_missing_file_is_a_weights_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.safetensors"
    with pytest.raises(WeightsError, match="absent.safetensors"):
        WeightStore.load(path)
    with pytest.raises(WeightsError, match="absent.safetensors"):
        check_weights_file(path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b"\x00" * len(b),  # zeroed
        lambda b: b"not a safetensors file",
        lambda b: b"",
        lambda b: (10**9).to_bytes(8, "little") + b[8:],  # header length out of range
    ],
    ids=["truncated", "zeroed", "garbage", "empty", "bad-header-length"],
)
def test_corrupt_file_is_a_weights_error(tmp_path: Path, damage) -> None:
    store = WeightStore()
    store.add("w", torch.randn(32, 32))
    path = store.save(tmp_path / "w.safetensors")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(WeightsError, match="w.safetensors"):
        WeightStore.load(path)
    with pytest.raises(WeightsError, match="w.safetensors"):  # the header check, without torch, agrees
        check_weights_file(path)


@pytest.mark.parametrize(
    "metadata",
    [
        {"forge.aliases": "{not json"},
        {"forge.aliases": json.dumps({"alias": "missing"})},
        {"forge.aliases": json.dumps(["w"])},
        {"forge.order": json.dumps(["w", "extra"])},
        {"forge.format": "forge-weights/999"},
    ],
    ids=["bad-json", "dangling-alias", "alias-not-a-map", "order-mismatch", "future-format"],
)
def test_inconsistent_metadata_is_a_weights_error(tmp_path: Path, metadata) -> None:
    path = tmp_path / "meta.safetensors"
    save_file({"w": torch.zeros(2)}, str(path), metadata=metadata)
    with pytest.raises(WeightsError, match="meta.safetensors"):
        WeightStore.load(path)
    with pytest.raises(WeightsError, match="meta.safetensors"):
        check_weights_file(path)


def test_the_header_check_names_the_entries_in_order(tmp_path: Path) -> None:
    store = WeightStore()
    store.add("b", torch.ones(2, 3))
    store.add("a", torch.zeros(3, dtype=torch.int64))
    store.add("tied", store["b"])
    path = store.save(tmp_path / "w.safetensors")
    assert check_weights_file(path) == ["b", "a"]


def test_a_lazy_store_is_loaded_once_on_first_use(tmp_path: Path) -> None:
    from xdsl.dialects.builtin import ModuleOp

    module = ModuleOp([])
    calls = []

    def load() -> WeightStore:
        calls.append(1)
        store = WeightStore()
        store.add("w", torch.ones(1))
        return store

    attach_weights_loader(module, load)
    assert pending_weights_loader(module) is load and calls == []
    assert weights_of(module)["w"].item() == 1.0 and weights_of(module) is weights_of(module)
    assert calls == [1] and pending_weights_loader(module) is None


def test_plain_safetensors_file_loads_without_aliases(tmp_path: Path) -> None:
    path = tmp_path / "plain.safetensors"
    save_file({"b": torch.ones(2), "a": torch.zeros(3)}, str(path))
    store = WeightStore.load(path)
    assert sorted(store.names()) == ["a", "b"] and store.aliases == {}


_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
           torch.int16, torch.int8, torch.uint8, torch.bool]


@st.composite
def _named_tensors(draw) -> list[tuple[str, torch.Tensor]]:
    names = draw(st.lists(st.text(min_size=1, max_size=12), min_size=0, max_size=6, unique=True))
    out: list[tuple[str, torch.Tensor]] = []
    for name in names:
        if out and draw(st.booleans()):  # sometimes tie to an earlier tensor
            out.append((name, draw(st.sampled_from(out))[1]))
            continue
        dtype = draw(st.sampled_from(_DTYPES))
        shape = draw(st.lists(st.integers(0, 4), max_size=4))
        seed = draw(st.integers(0, 2**31 - 1))
        gen = torch.Generator().manual_seed(seed)
        if dtype == torch.bool:
            t = torch.randint(0, 2, shape, generator=gen).bool()
        elif dtype.is_floating_point:
            t = (torch.randn(shape, generator=gen, dtype=torch.float64) * 100).to(dtype)
        else:
            info = torch.iinfo(dtype)
            t = torch.randint(max(info.min, -(2**31)), min(info.max, 2**31 - 1), shape,
                              generator=gen, dtype=torch.int64).to(dtype)
        if t.dim() >= 2 and draw(st.booleans()):
            t = t.transpose(0, 1)  # non-contiguous
        out.append((name, t))
    return out


@settings(max_examples=60, deadline=None)
@given(_named_tensors())
def test_save_load_round_trips_random_named_tensors(named: list[tuple[str, torch.Tensor]]) -> None:
    store = WeightStore()
    store.add_all(named)
    with tempfile.TemporaryDirectory() as tmp:
        loaded = WeightStore.load(store.save(Path(tmp) / "w.safetensors"))
    _assert_same_store(store, loaded)
    for name, tensor in named:
        assert name in loaded
        assert torch.equal(loaded[name], tensor)


# -- model.mlir + model.safetensors -------------------------------------------------------------

_IR = """\
builtin.module {
  func.func @add_one(%x : i32) -> i32 {
    %one = arith.constant 1 : i32
    %y = arith.addi %x, %one : i32
    func.return %y : i32
  }
}
"""


def _parse(text: str):
    from xdsl.parser import Parser

    return Parser(make_context(), text).parse_module()


def test_companion_weights_path() -> None:
    assert companion_weights_path("out/model.mlir") == Path("out/model.safetensors")
    assert companion_weights_path(Path("model")) == Path("model.safetensors")


@pytest.mark.parametrize("as_text", [False, True], ids=["module-op", "text"])
def test_save_and_load_module_side_by_side(tmp_path: Path, as_text: bool) -> None:
    module = _parse(_IR)
    store = WeightStore()
    w = torch.randn(4, 4)
    store.add("w", w)
    store.add("w_tied", w)
    mlir_path = tmp_path / "sub" / "model.mlir"
    written = save_module(_IR if as_text else module, store, mlir_path)
    assert written == (mlir_path, tmp_path / "sub" / "model.safetensors")
    assert all(p.is_file() for p in written)

    loaded_module, loaded_store = load_module(make_context(), mlir_path)
    loaded_module.verify()
    assert str(loaded_module) == str(module)
    _assert_same_store(store, loaded_store)

    again, _ = load_module(make_context(), mlir_path)
    assert str(again) == str(module)


def test_load_module_without_weights_is_a_weights_error(tmp_path: Path) -> None:
    mlir_path = tmp_path / "model.mlir"
    mlir_path.write_text(_IR)
    with pytest.raises(WeightsError, match="model.safetensors"):
        load_module(make_context(), mlir_path)


def test_subset_keeps_only_the_named_entries_and_their_aliases():
    store = WeightStore()
    shared = torch.randn(3, 2)
    store.add("wte", shared)
    store.add("lm_head", shared)  # tied: an alias
    store.add("wpe", torch.randn(4, 2))
    kept = store.subset(["lm_head"])
    assert kept.names() == ["wte"]
    assert kept.resolve("lm_head") == "wte"
    assert "wpe" not in kept


# -- giving back mapped pages (forge/mapped_pages.py) ------------------------------------------------


def _resident_kib(t: torch.Tensor) -> int:
    """This process's resident KiB of the mapping holding t (/proc/self/smaps `Rss`)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            inside = lo <= t.data_ptr() < hi
        elif inside and fields[0] == "Rss:":
            return int(fields[1])
    raise AssertionError("no mapping holds the tensor")


def test_mapped_weights_give_back_their_pages_and_keep_their_values(tmp_path: Path) -> None:
    store = WeightStore()
    store.add("w", torch.randn(512, 1024, generator=torch.Generator().manual_seed(0)))
    store.add("b", torch.arange(4096, dtype=torch.float32))
    expected = {name: store[name].clone() for name in store}
    loaded = WeightStore.load(store.save(tmp_path / "w.safetensors"))
    for name in loaded:
        loaded[name].sum()  # touch every page
    assert _resident_kib(loaded["w"]) >= 2040
    released = loaded.release_mapped_pages()
    assert released >= 512 * 1024 * 4 - 2 * 4096  # whole pages inside each tensor
    assert _resident_kib(loaded["w"]) <= 64  # the header and the pages tensors share at their ends
    for name in loaded:  # read back from the file, unchanged
        assert torch.equal(loaded[name], expected[name])


def test_memory_that_is_not_an_unwritten_file_mapping_is_left_alone(tmp_path: Path) -> None:
    """Anonymous memory (an ordinary tensor) and a private file mapping that was written: MADV_DONTNEED
    would zero the one and undo the write in the other, so neither is advised."""
    store = WeightStore()
    store.add("w", torch.randn(256, 1024))
    kept = store["w"].clone()
    assert store.release_mapped_pages() == 0 and torch.equal(store["w"], kept)
    loaded = WeightStore.load(store.save(tmp_path / "w.safetensors"))
    loaded["w"][0, 0] = 5.0  # copy-on-write: that page is anonymous now
    assert loaded.release_mapped_pages() == 0
    assert loaded["w"][0, 0].item() == 5.0 and torch.equal(loaded["w"][1:], kept[1:])


def test_same_entry_is_bitwise_and_adopt_shares_memory():
    """`same_entry`: the same memory, or the same shape, dtype and bytes (-0.0 differs from 0.0, a NaN matches
    the same NaN); a compressed entry matches the same form only. `adopt` holds the other store's entries (and
    their aliases) by reference."""
    from forge.quantize import quantize

    values = torch.tensor([[1.0, -0.0], [float("nan"), float("inf")]])
    a, b, c, d = WeightStore(), WeightStore(), WeightStore(), WeightStore()
    a.add("w", values)
    a.add("tied", values)  # an alias of "w"
    b.add("w", values.clone())
    c.add("w", torch.tensor([[1.0, 0.0], [float("nan"), float("inf")]]))
    d.add("w", values.clone())
    d.compress("w", quantize(torch.ones(2, 2), "int8"))
    assert a.same_entry("w", b)
    assert not a.same_entry("w", c)  # -0.0 against 0.0
    assert not a.same_entry("w", d) and not d.same_entry("w", a)
    e = WeightStore()
    e.adopt(a, ["tied"])
    assert e["w"].data_ptr() == values.data_ptr() and e.resolve("tied") == "w"
    with pytest.raises(ValueError, match="different data"):
        e.adopt(c, ["w"])
    f = WeightStore()
    f.adopt(d, ["w"])
    assert f.compressed("w") is d.compressed("w") and f.same_entry("w", d)


def _mkl_buffer_bytes() -> int:
    """Bytes MKL's memory manager holds (`mkl_mem_stat`, exported by torch's libtorch_cpu as `mkl_serv_mem_stat`)."""
    import ctypes

    from forge.mapped_pages import mkl_library

    library = mkl_library()
    assert library is not None, "torch's libtorch_cpu was not found"
    stat = library.mkl_serv_mem_stat
    stat.restype = ctypes.c_int64
    return int(stat(ctypes.byref(ctypes.c_int(0))))


def test_return_freed_heap_frees_the_buffers_torchs_mkl_keeps_after_a_gemm() -> None:
    """The lock's torch exports MKL's internal `mkl_serv_free_buffers` (no `mkl_free_buffers`): if a torch
    drops it, this fails here instead of compiles silently keeping MKL's buffers (27 MiB after an eager GPT-2)."""
    from forge.mapped_pages import MKL_FREE_BUFFERS, mkl_library, return_freed_heap

    library = mkl_library()
    assert library is not None and any(hasattr(library, name) for name in MKL_FREE_BUFFERS)
    seeded = torch.Generator().manual_seed(0)
    a, b = torch.randn(256, 1024, generator=seeded), torch.randn(1024, 1024, generator=seeded)
    expected = (a.double() @ b.double()).float()
    assert torch.allclose(a @ b, expected, atol=1e-3)
    assert _mkl_buffer_bytes() > 0, "an f32 GEMM of this size keeps MKL work buffers"
    return_freed_heap()
    assert _mkl_buffer_bytes() == 0
    assert torch.allclose(a @ b, expected, atol=1e-3)  # MKL allocates them again when it needs them
