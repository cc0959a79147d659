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
from forge.driver.dynamic import DynamicCompiledModel
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
    first = forge.load(fresh, cache_dir=True).generate(ids, 6)
    blobs = sorted((fresh / "ov_cache").glob("*.blob"))
    assert len(blobs) == 1  # both graphs are one device program (their GraphGroup)
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
