"""Compiling without weights (`forge.compile_meta`): a model built on the meta device compiles to an
artifact that references safetensors files, and `forge.load` binds them (memory-mapped).

One small Llama: its real weights written with `safetensors.torch.save_file`, the same architecture
built under `init_empty_weights` (no parameter storage), compiled once per module; the loaded model
matches the eager model with the real weights.
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

import forge
from forge.driver.compile_errors import CompileError, LoadError
from forge.frontend.meta_weights import SafetensorsSource, WeightBindError, init_empty_weights

CONFIG = dict(
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    vocab_size=256,
    tie_word_embeddings=False,
)
IDS = torch.tensor([[3, 17, 42, 7, 99, 5, 250, 1]])
KWARGS = {"use_cache": False}


def _config() -> LlamaConfig:
    return LlamaConfig(**CONFIG)


@pytest.fixture(scope="module")
def eager(tmp_path_factory):
    """(the real model, the directory of its model.safetensors)."""
    torch.manual_seed(0)
    model = LlamaForCausalLM(_config()).eval()
    directory = tmp_path_factory.mktemp("llama_weights")
    state = {k: v for k, v in model.state_dict().items() if k in dict(model.named_parameters())}
    save_file(state, directory / "model.safetensors")
    return model, directory


@pytest.fixture(scope="module")
def artifact(eager, tmp_path_factory):
    _, weights = eager
    with init_empty_weights():
        meta_model = LlamaForCausalLM(_config()).eval()
    assert all(p.is_meta for p in meta_model.parameters())
    return forge.compile_meta(
        meta_model, (IDS,), KWARGS, save_to=tmp_path_factory.mktemp("art"), weights_from=weights / "model.safetensors"
    )


def test_init_empty_weights_keeps_buffers_real():
    with init_empty_weights():
        model = LlamaForCausalLM(_config())
    assert all(p.is_meta for p in model.parameters())
    assert all(not b.is_meta for b in model.buffers())  # the rotary tables are computed, not loaded


def test_artifact_references_the_weights(artifact, eager):
    meta = json.loads((artifact / "meta.json").read_text())
    external = meta["external_weights"]
    params = dict(eager[0].named_parameters())
    assert set(external["tensors"]) == set(params)
    assert [f["path"] for f in external["files"]] == [str((eager[1] / "model.safetensors").resolve())]
    for name, entry in external["tensors"].items():
        assert entry["shape"] == list(params[name].shape)
    # the artifact's own weights file holds no parameter: only what the compile made (folded tables)
    own = SafetensorsSource.open(artifact / "model.safetensors")
    assert not set(own.entries) & set(params)
    assert meta["report"]["weights_external"] == len(params)
    assert meta["report"]["blocks"]["reused"] == 1  # the second decoder layer: a copy of the first
    assert 0 < meta["report"]["save_ms"] < meta["report"]["other_ms"] < meta["report"]["total_ms"]


def test_load_binds_and_matches_eager(artifact, eager):
    model, _ = eager
    loaded = forge.load(artifact)
    with torch.no_grad():
        expected = model(IDS, **KWARGS).logits
    got = loaded(IDS, **KWARGS).logits
    assert (expected - got).abs().max().item() <= 2.1e-5
    bound = loaded.weights["model.layers.0.mlp.up_proj.weight"]
    assert torch.equal(bound, model.model.layers[0].mlp.up_proj.weight)


def test_missing_tensor_names_tensor_and_file(artifact, eager, tmp_path):
    model, _ = eager
    state = {k: v for k, v in model.state_dict().items() if k in dict(model.named_parameters())}
    del state["model.norm.weight"]
    save_file(state, tmp_path / "partial.safetensors")
    with pytest.raises(LoadError, match=r"'model\.norm\.weight' .*none of the weights files: .*partial\.safetensors"):
        forge.load(artifact, weights_from=tmp_path / "partial.safetensors")


def test_wrong_shape_and_dtype_name_tensor_and_file(artifact, eager, tmp_path):
    model, _ = eager
    state = {k: v.clone() for k, v in model.state_dict().items() if k in dict(model.named_parameters())}
    state["model.norm.weight"] = torch.ones(32)
    save_file(state, tmp_path / "shape.safetensors")
    with pytest.raises(
        LoadError,
        match=r"'model\.norm\.weight' in .*shape\.safetensors is float32 \[32\], "
        r"but the model was compiled with float32 \[64\]",
    ):
        forge.load(artifact, weights_from=tmp_path / "shape.safetensors")
    state["model.norm.weight"] = torch.ones(64, dtype=torch.float16)
    save_file(state, tmp_path / "dtype.safetensors")
    with pytest.raises(LoadError, match=r"'model\.norm\.weight' in .*dtype\.safetensors is float16 \[64\]"):
        forge.load(artifact, weights_from=tmp_path / "dtype.safetensors")


def test_compile_meta_checks_the_files_first(tmp_path):
    with init_empty_weights():
        model = LlamaForCausalLM(_config()).eval()
    save_file({"model.norm.weight": torch.ones(64)}, tmp_path / "few.safetensors")
    with pytest.raises(
        CompileError,
        match=r"weight '[\w.]+' .*none of the weights files: .*few\.safetensors "
        r"\(and 19 more weights missing\)",
    ):
        forge.compile_meta(model, (IDS,), KWARGS, save_to=tmp_path / "art", weights_from=tmp_path / "few.safetensors")
    with pytest.raises(CompileError, match=r"weights file not found: .*nothing\.st"):
        forge.compile_meta(model, (IDS,), KWARGS, save_to=tmp_path / "art", weights_from=tmp_path / "nothing.st")


def test_compile_refuses_meta_weights(tmp_path):
    with init_empty_weights():
        model = torch.nn.Embedding(10, 4)
    with pytest.raises(CompileError, match=r"on the meta device \(first: 'weight'\).*forge\.compile_meta"):
        forge.compile(model, (torch.tensor([[1, 2, 3]]),))


def test_corrupt_weights_file_is_named(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(WeightBindError, match=r"bad\.safetensors: corrupt header"):
        SafetensorsSource.open(path)


def test_tied_bf16_checkpoint(tmp_path):
    """A tied embedding / LM head is one external weight, found under whichever name the file keeps; a bf16
    model compiles in f32 (the cast policy), its bf16 checkpoint converted when bound."""
    torch.manual_seed(1)
    config = LlamaConfig(**{**CONFIG, "num_hidden_layers": 1, "tie_word_embeddings": True})
    model = LlamaForCausalLM(config).eval().to(torch.bfloat16)
    params = dict(model.named_parameters(remove_duplicate=False))
    save_file({k: v for k, v in params.items() if k != "model.embed_tokens.weight"}, tmp_path / "tied.safetensors")
    with init_empty_weights():
        meta_model = LlamaForCausalLM(config).eval().to(torch.bfloat16)
    artifact = forge.compile_meta(
        meta_model, (IDS,), KWARGS, save_to=tmp_path / "art", weights_from=tmp_path / "tied.safetensors"
    )  # the head's name only
    meta = json.loads((artifact / "meta.json").read_text())
    tensors = meta["external_weights"]["tensors"]
    assert tensors["model.embed_tokens.weight"]["key"] == "lm_head.weight" and "lm_head.weight" not in tensors
    assert meta["external_weights"]["cast"] is True and meta["cast"]["compute_dtype"] == "float32"
    loaded = forge.load(artifact)
    with torch.no_grad():
        expected = model.float()(IDS, **KWARGS).logits
    got = loaded.run((IDS,), KWARGS, cast_back=False).logits
    assert got.dtype == torch.float32 and (expected - got).abs().max().item() <= 2.1e-5
    assert loaded(IDS, **KWARGS).logits.dtype == torch.bfloat16


def test_meta_compile_is_the_compile_with_weights(artifact, eager):
    """Without weights the compiler makes the same program: the saved buffer IR equals the one `compile`
    makes from the real model (no pass depended on a weight value)."""
    compiled = forge.compile(eager[0], (IDS,), KWARGS)
    assert str(compiled.buffer_module).strip() == (artifact / "model.mlir").read_text().strip()


def test_sharded_checkpoint_directory(artifact, eager, tmp_path):
    """A directory of shards (as `save_pretrained` writes an 8B model) binds from every file; a tensor in
    two shards is refused, naming both."""
    model, _ = eager
    params = list(model.named_parameters())
    half = len(params) // 2
    save_file(dict(params[:half]), tmp_path / "model-00001-of-00002.safetensors")
    save_file(dict(params[half:]), tmp_path / "model-00002-of-00002.safetensors")
    loaded = forge.load(artifact, weights_from=tmp_path)
    files = {f["path"].rsplit("/", 1)[-1] for f in loaded.external_weights["files"]}
    assert files == {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
    with torch.no_grad():
        expected = model(IDS, **KWARGS).logits
    assert (expected - loaded(IDS, **KWARGS).logits).abs().max().item() <= 2.1e-5
    save_file(dict(params[:1]), tmp_path / "extra.safetensors")
    with pytest.raises(LoadError, match=rf"tensor '{params[0][0]}' is in two weights files: .*extra\.safetensors"):
        forge.load(artifact, weights_from=tmp_path)


def test_model_built_on_meta_device_names_its_buffers(eager, tmp_path):
    """Under `torch.device("meta")` the rotary tables lose their values too: the error says so."""
    with torch.device("meta"):
        model = LlamaForCausalLM(_config()).eval()
    with pytest.raises(
        CompileError,
        match=r"buffer\(s\) 'model\.rotary_emb\.inv_freq'.* are on the meta device.*"
        r"forge\.init_empty_weights\(\)",
    ):
        forge.compile_meta(model, (IDS,), KWARGS, save_to=tmp_path / "art", weights_from=eager[1])


def test_readme_example_with_the_default_use_cache(tmp_path):
    """README's large-model example as written, on the zoo's Llama (small) with transformers' default
    use_cache: the KV cache's empty initial tensors, lifted as meta constants while tracing, are not
    checkpoint weights (the importer materializes them), and the loaded model matches eager."""
    from forge.models import build_model

    zoo = build_model("llama", small=True)
    config = zoo.hf.config
    config.use_cache = True  # transformers' default (the zoo turns it off)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    save_file({k: v.contiguous() for k, v in zoo.hf.state_dict().items()}, ckpt / "model.safetensors")
    ids = torch.randint(0, config.vocab_size, (1, 16), generator=torch.Generator().manual_seed(0))

    import transformers

    with forge.init_empty_weights():
        model = transformers.LlamaForCausalLM(config)
    forge.compile_meta(model, (ids,), save_to=tmp_path / "out", weights_from=str(ckpt) + "/")
    runnable = forge.load(tmp_path / "out")  # binds ckpt/*.safetensors memory-mapped

    with torch.no_grad():
        expected = zoo.hf(ids, use_cache=True).logits
    assert (runnable(ids).logits - expected).abs().max().item() <= 2.1e-5


def test_a_meta_constant_made_while_tracing_is_named_as_such(eager, tmp_path):
    """A non-empty constant the model creates on the meta device while it is traced is no checkpoint weight:
    the error says what it is (a real missing weight still says "in none of the weights files": above)."""

    class Scaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(8, 4)

        def forward(self, ids):
            hidden = self.emb(ids)
            return hidden * torch.tensor([1.0, 2.0, 3.0, 4.0], device=hidden.device)

    torch.manual_seed(0)
    real = Scaled()
    save_file(dict(real.state_dict()), tmp_path / "model.safetensors")
    with init_empty_weights():
        model = Scaled()
    message = r"constant 'lifted_tensor_0' \(float32 \[4\]\) was created by the model while it was traced, on the meta"
    with pytest.raises(CompileError, match=message):
        forge.compile_meta(model, (torch.tensor([[1, 2]]),), save_to=tmp_path / "out", weights_from=tmp_path)
