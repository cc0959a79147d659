"""Saving and loading a dynamic model's buckets and a generator's graphs (forge/driver/saved_kinds.py).

The zoo Llama (2 layers, hidden 64): `DynamicCompiledModel.save` over Dim [8, 16] (buckets 8, 16) and
`Generator.save` (chunk 8, cache 24); `forge.load` gives back objects with the same outputs (exactly: the same
programs on the same runtime) and the same greedy tokens; a missing or changed file is a LoadError naming it.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from torch.export import Dim

import forge
from forge.driver.compile_errors import LoadError
from forge.driver.dynamic import DynamicCompiledModel, DynamicShapeError
from forge.driver.generation import Generator, compile_generator
from forge.driver.load import ov_cache_dir
from forge.models import build_model, example_inputs

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def llama():
    return build_model("llama", small=True).eval()


@pytest.fixture(scope="module")
def dynamic_dir(llama, tmp_path_factory):
    ids = example_inputs("llama", seq_len=12, small=True, seed=0)[0]
    compiled = forge.compile(llama, (ids,), dynamic_shapes=({1: Dim("seq", min=8, max=16)},))
    directory = compiled.save(tmp_path_factory.mktemp("dyn") / "model")
    return compiled, directory


@pytest.fixture(scope="module")
def generator_dir(llama, tmp_path_factory):
    gen = compile_generator(llama, batch=1, chunk=8, cache_len=24)
    return gen, gen.save(tmp_path_factory.mktemp("gen") / "gen")


def test_dynamic_round_trip(dynamic_dir):
    compiled, directory = dynamic_dir
    loaded = forge.load(directory)
    assert isinstance(loaded, DynamicCompiledModel)
    assert sorted(loaded.buckets) == [8, 16]
    for length in (8, 11, 16):
        ids = example_inputs("llama", seq_len=length, small=True, seed=length)[0]
        assert torch.equal(loaded(ids), compiled(ids))
    with pytest.raises(Exception, match="outside the compiled range"):
        loaded(example_inputs("llama", seq_len=20, small=True, seed=1)[0])
    saved = r"do not match the saved model's forward\(input_ids.*\): .*'use_cache'"
    with pytest.raises(DynamicShapeError, match=saved):
        loaded(ids, use_cache=False)  # the model's signature, saved with it (no module to name once loaded)


def test_dynamic_buckets_share_one_weights_file(dynamic_dir, tmp_path):
    """The weights every bucket holds alike are written once beside the buckets; the loaded buckets read them
    from one mapping (the same memory: one device program keeps one copy); a bucket loads on its own too; a
    changed shared file is refused."""
    compiled, directory = dynamic_dir
    shared = directory / "model.safetensors"
    own = {b: directory / f"bucket_{b}" / "model.safetensors" for b in (8, 16)}
    assert shared.stat().st_size > 20 * max(f.stat().st_size for f in own.values())
    loaded = forge.load(directory)
    stores = [loaded.buckets[b].weights for b in (8, 16)]
    names = [n for n in stores[0].names() if n in stores[1] and stores[0][n].numel() > 1000]
    assert names and all(stores[0][n].data_ptr() == stores[1][n].data_ptr() for n in names)
    assert loaded.report["dynamic"]["device_program"] == {**loaded.group.report(), "graphs": 2}
    alone = forge.load(directory / "bucket_8")
    ids = example_inputs("llama", seq_len=8, small=True, seed=8)[0]
    assert (alone(ids) - compiled(ids)).abs().max() < 1e-5  # compiled alone, not as an If body: f32 rounding
    edited = _copy(directory, tmp_path / "edited")
    data = (edited / "model.safetensors").read_bytes()
    (edited / "model.safetensors").write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # one bit flipped
    with pytest.raises(LoadError, match="model.safetensors: changed"):
        forge.load(edited)
    with pytest.raises(LoadError, match="model.safetensors: changed"):
        forge.load(edited / "bucket_16")


def test_a_generator_whose_graphs_disagree_on_a_weight_is_not_saved(llama, tmp_path):
    """One file holds one value per name: a generator whose prefill and decode stores hold different values
    under one name (a constant folded per graph) is refused, never saved with one graph's value for both."""
    gen = compile_generator(llama, batch=1, chunk=8, cache_len=24)
    name = next(n for n in gen.prefill.imported.weights.names() if gen.prefill.imported.weights[n].numel() > 1)
    store = gen.prefill.imported.weights
    store._tensors[name] = store[name].clone() + 1  # the prefill graph's value differs from the decode graph's
    with pytest.raises(ValueError, match=f"different values under the weight name.*{name}"):
        gen.save(tmp_path / "gen")


def test_generator_round_trip(llama, generator_dir):
    gen, directory = generator_dir
    loaded = forge.load(directory)
    assert isinstance(loaded, Generator) and (loaded.chunk, loaded.cache_len) == (8, 24)
    assert loaded.decode.report["released_weight_bytes"] > 0  # both graphs compiled: the mapped pages given back
    ids = torch.randint(0, llama.hf.config.vocab_size - 1, (1, 5), generator=torch.Generator().manual_seed(3))
    assert torch.equal(loaded.generate(ids, 12), gen.generate(ids, 12))
    sampled = {"do_sample": True, "top_k": 5, "seed": 7}
    assert torch.equal(loaded.generate(ids, 6, **sampled), gen.generate(ids, 6, **sampled))


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_generator_corrupt_files(generator_dir, tmp_path):
    _, directory = generator_dir
    broken = _copy(directory, tmp_path / "a")
    (broken / "decode.mlir").unlink()
    with pytest.raises(LoadError, match="decode.mlir"):
        forge.load(broken)
    edited = _copy(directory, tmp_path / "b")
    (edited / "model.safetensors").write_bytes((edited / "model.safetensors").read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(LoadError, match="model.safetensors: changed"):
        forge.load(edited)
    bad = _copy(directory, tmp_path / "c")
    (bad / "meta.json").write_text("{not json")
    with pytest.raises(LoadError, match="meta.json: corrupt"):
        forge.load(bad)
    garbled = _copy(directory, tmp_path / "d")  # the IR no longer parses: the changed file is the error, not the parse
    (garbled / "prefill.mlir").write_text("garbage" + (garbled / "prefill.mlir").read_text())
    with pytest.raises(LoadError, match="prefill.mlir: changed since it was saved"):
        forge.load(garbled)
    config = _copy(directory, tmp_path / "e")
    meta = json.loads((config / "meta.json").read_text())
    meta["generation_config"] = ["not", "a", "mapping"]
    (config / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(LoadError, match="corrupt 'generation_config'"):
        forge.load(config)
    older = _copy(directory, tmp_path / "f")  # /1's decode graph took the prompt's 0/1 mask, not the keys
    meta = json.loads((older / "meta.json").read_text())
    assert meta["format"] == "forge-generator/2"
    meta["format"] = "forge-generator/1"
    (older / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(LoadError, match=r"a generator saved as forge-generator/1; this Forge reads forge-generator/2"):
        forge.load(older)


def test_a_loaded_generators_config_is_the_saved_one(llama, generator_dir, tmp_path):
    """The loaded `generation_config` reads as transformers' (every setting the save wrote), goes back to a
    GenerationConfig equal to the model's, and a loaded generator saves again and loads with the same tokens."""
    from transformers import GenerationConfig

    gen, directory = generator_dir
    loaded = forge.load(directory)
    config = loaded.hf.generation_config
    assert config.eos_token_id == llama.hf.generation_config.eos_token_id == 2
    assert config.to_dict() == llama.hf.generation_config.to_dict()
    assert GenerationConfig.from_dict(config.to_dict()) == llama.hf.generation_config
    again = forge.load(loaded.save(tmp_path / "again"))
    ids = torch.randint(0, llama.hf.config.vocab_size - 1, (1, 5), generator=torch.Generator().manual_seed(5))
    assert torch.equal(again.generate(ids, 6), gen.generate(ids, 6))


def test_greedy_generation_from_a_loaded_generator_needs_no_transformers(generator_dir):
    """A fresh process that loads a generator and decodes greedily never imports transformers (0.6 s and 21 MiB);
    sampling with top-k imports it for its logits processors."""
    import subprocess
    import sys

    _, directory = generator_dir
    script = (
        "import sys, torch, forge\n"
        f"gen = forge.load({str(directory)!r})\n"
        "ids = torch.tensor([[3, 5, 7]])\n"
        "gen.generate(ids, 3)\n"
        "print('transformers' in sys.modules)\n"
        "gen.generate(ids, 3, do_sample=True, top_k=5, seed=1)\n"
        "print('transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_dynamic_corrupt_files(dynamic_dir, tmp_path):
    _, directory = dynamic_dir
    missing = _copy(directory, tmp_path / "a")
    (missing / "bucket_8" / "model.mlir").unlink()
    with pytest.raises(LoadError, match="bucket_8"):
        forge.load(missing)
    edited = _copy(directory, tmp_path / "b")
    meta = json.loads((edited / "meta.json").read_text())
    del meta["dim"]
    (edited / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(LoadError, match="meta.json: missing 'dim'"):
        forge.load(edited)


def test_openvino_cache_inside_the_artifact(llama, generator_dir, tmp_path):
    """With cache_dir=True a load compiles the generator's device program once into the artifact's ov_cache/ (OpenVINO's
    CACHE_DIR); a later load imports the blobs (same tokens); a path puts it there. The default leaves the
    CPU without a cache (a second copy of the weights, no faster) and gives other devices one."""
    _, directory = generator_dir
    fresh = _copy(directory, tmp_path / "gen")
    shutil.rmtree(fresh / "ov_cache", ignore_errors=True)
    ids = torch.randint(0, llama.hf.config.vocab_size - 1, (1, 5), generator=torch.Generator().manual_seed(4))
    loaded = forge.load(fresh, cache_dir=True)
    first = loaded.generate(ids, 6)
    blobs = sorted((fresh / "ov_cache").glob("*.blob"))
    one = loaded.report()["device_program"]["sharing"]["one_program"]
    assert len(blobs) == (1 if one else 2)  # one blob per device program (both graphs in one, or each its own)
    assert torch.equal(forge.load(fresh, cache_dir=True).generate(ids, 6), first)
    assert sorted((fresh / "ov_cache").glob("*.blob")) == blobs  # hits: nothing compiled anew
    off = _copy(directory, tmp_path / "off")
    shutil.rmtree(off / "ov_cache", ignore_errors=True)
    forge.load(off)  # the CPU: no cache by default
    forge.load(off, cache_dir=False)
    assert not (off / "ov_cache").exists()
    assert ov_cache_dir(off, None, "NPU") == str(off / "ov_cache") and ov_cache_dir(off, None, "CPU") is None
    forge.load(off, cache_dir=tmp_path / "elsewhere")
    assert list((tmp_path / "elsewhere").glob("*.blob")) and not (off / "ov_cache").exists()
