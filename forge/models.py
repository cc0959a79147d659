"""The model zoo: the transformer families Forge must compile end to end.

Every model is built from a `transformers` configuration with seeded random weights (nothing is
ever downloaded), in eval mode and fp32:

* ``gpt2``  -- `GPT2LMHeadModel`: learned positions, LayerNorm, GELU MLP, embedding tied to
  the LM head.
* ``llama`` -- `LlamaForCausalLM`: RoPE, grouped-query attention, SwiGLU MLP, RMSNorm, untied head.
* ``bert``  -- `BertModel` without the pooler: a bidirectional encoder; its output is
  ``last_hidden_state``.

Each family comes in both attention implementations that transformers offers, ``"sdpa"`` (one
`scaled_dot_product_attention` call, what `fuse-attention` wants to see) and ``"eager"`` (explicit
matmul/softmax/matmul, what `fuse-attention` has to recognise). ``small=True`` gives a tiny variant
for tests; the default sizes are the benchmark ones.

The modules returned by :func:`build_model` are thin wrappers (:class:`ZooModel`) around the
Hugging Face model.  They exist because the HF ``forward`` is built for training and generation, not
for a static-shape NPU graph: it takes many optional inputs, returns a ``ModelOutput`` holding a KV
cache, hidden states and attentions, and decides the cache type at run time.  The wrapper fixes the
contract Forge compiles: ``forward(input_ids: LongTensor[1, L]) -> Tensor`` with ``use_cache=False``
(no KV cache tensors in the graph), ``return_dict=True`` and a single output (logits, or
``last_hidden_state`` for BERT).  Exported with static example inputs, every shape in the graph is
a constant -- which is what the NPU needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

ZOO: tuple[str, ...] = ("gpt2", "llama", "bert")
ATTN_IMPLS: tuple[str, ...] = ("sdpa", "eager")

#: Sizes shared by the ``small=True`` variants of every family.
SMALL_LAYERS = 2
SMALL_HIDDEN = 64
SMALL_HEADS = 4
SMALL_KV_HEADS = 2  # llama only
SMALL_INTERMEDIATE = 128
SMALL_VOCAB = 512
SMALL_MAX_POSITIONS = 128


@dataclass(frozen=True)
class _Sizes:
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    max_positions: int


# Benchmark sizes.  GPT-2 and BERT are the published base sizes.  The Llama-style decoder is a
# scaled-down Llama (no public checkpoint is needed, only the architecture): head_dim 64 like
# GPT-2/BERT, 4 query heads per KV head, intermediate ~2.75x hidden (the Llama SwiGLU ratio,
# rounded to a multiple of 256).  ~200M parameters: big enough to be a realistic NPU workload,
# small enough to build, export and compile in seconds on a CPU.
_FULL: dict[str, _Sizes] = {
    "gpt2": _Sizes(vocab=50257, hidden=768, layers=12, heads=12, kv_heads=12,
                   intermediate=3072, max_positions=1024),
    "llama": _Sizes(vocab=32000, hidden=1024, layers=12, heads=16, kv_heads=4,
                    intermediate=2816, max_positions=2048),
    "bert": _Sizes(vocab=30522, hidden=768, layers=12, heads=12, kv_heads=12,
                   intermediate=3072, max_positions=512),
}

_SMALL: dict[str, _Sizes] = {
    name: _Sizes(vocab=SMALL_VOCAB, hidden=SMALL_HIDDEN, layers=SMALL_LAYERS, heads=SMALL_HEADS,
                 kv_heads=SMALL_KV_HEADS if name == "llama" else SMALL_HEADS,
                 intermediate=SMALL_INTERMEDIATE, max_positions=SMALL_MAX_POSITIONS)
    for name in ZOO
}


def _check_name(name: str) -> None:
    if name not in ZOO:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(ZOO)}")


def _check_attn(attn: str) -> None:
    if attn not in ATTN_IMPLS:
        raise ValueError(
            f"unknown attention implementation {attn!r}; valid: {', '.join(ATTN_IMPLS)}"
        )


def _sizes(name: str, small: bool) -> _Sizes:
    _check_name(name)
    return (_SMALL if small else _FULL)[name]


def vocab_size(name: str, *, small: bool = False) -> int:
    """Vocabulary size of a zoo model (the exclusive upper bound of valid token ids)."""
    return _sizes(name, small).vocab


def max_positions(name: str, *, small: bool = False) -> int:
    """Longest sequence a zoo model accepts (its position-embedding / RoPE table size)."""
    return _sizes(name, small).max_positions


def make_config(name: str, *, layers: int | None = None, attn: str = "sdpa",
                small: bool = False) -> Any:
    """The `transformers` configuration of a zoo model (dropout off, fp32, no KV cache)."""
    s = _sizes(name, small)
    _check_attn(attn)
    if layers is not None and (not isinstance(layers, int) or layers < 1):
        raise ValueError(f"layers must be a positive int, got {layers!r}")
    n_layers = s.layers if layers is None else layers

    if name == "gpt2":
        from transformers import GPT2Config  # lazy: start-up cost (transformers)

        config = GPT2Config(
            vocab_size=s.vocab, n_positions=s.max_positions, n_embd=s.hidden, n_layer=n_layers,
            n_head=s.heads, n_inner=s.intermediate,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            use_cache=False, tie_word_embeddings=True,
            # GPT-2 uses its last token as BOS/EOS; keep that true for the small vocab.
            bos_token_id=s.vocab - 1, eos_token_id=s.vocab - 1,
        )
    elif name == "llama":
        from transformers import LlamaConfig  # lazy: start-up cost (transformers)

        config = LlamaConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
            num_hidden_layers=n_layers, num_attention_heads=s.heads,
            num_key_value_heads=s.kv_heads, max_position_embeddings=s.max_positions,
            hidden_act="silu", rms_norm_eps=1e-6, attention_dropout=0.0,
            use_cache=False, tie_word_embeddings=False,
        )
    else:
        from transformers import BertConfig  # lazy: start-up cost (transformers)

        config = BertConfig(
            vocab_size=s.vocab, hidden_size=s.hidden, num_hidden_layers=n_layers,
            num_attention_heads=s.heads, intermediate_size=s.intermediate,
            max_position_embeddings=s.max_positions,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, use_cache=False,
        )
    config._attn_implementation = attn
    return config


class ZooModel(nn.Module):
    """A zoo model with the single-tensor contract Forge compiles.

    ``forward(input_ids: LongTensor[1, L]) -> Tensor``: logits ``[1, L, vocab]`` for the decoders,
    ``last_hidden_state`` ``[1, L, hidden]`` for BERT.  The HF model is called with
    ``use_cache=False`` (no KV cache in the graph: Forge compiles one static-shape prefill graph for
    the NPU, not an incremental decoder) and ``return_dict=True``, and only the one tensor is
    returned, so the exported graph has exactly one user output.  The HF module is ``self.hf``;
    parameter names are therefore ``hf.<HF name>``.
    """

    def __init__(self, name: str, attn: str, hf: nn.Module) -> None:
        super().__init__()
        self.name = name
        self.attn = attn
        self.hf = hf

    @property
    def config(self) -> Any:
        return self.hf.config

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.name == "bert":
            return self.hf(input_ids=input_ids, return_dict=True).last_hidden_state
        return self.hf(input_ids=input_ids, use_cache=False, return_dict=True).logits

    def extra_repr(self) -> str:
        return f"name={self.name!r}, attn={self.attn!r}"


def build_model(name: str, *, layers: int | None = None, attn: str = "sdpa", small: bool = False,
                seed: int = 0) -> ZooModel:
    """Build a zoo model with seeded random weights, in eval mode, fp32.

    ``small=True`` gives the test variant (2 layers, hidden 64, 4 heads -- llama: 2 KV heads --,
    intermediate 128, vocab 512, 128 positions); ``layers`` overrides the depth.  The same
    arguments and seed always give the same weights.  The global torch RNG is seeded (that is how
    transformers initialises weights) and left in the seeded state.
    """
    config = make_config(name, layers=layers, attn=attn, small=small)
    if name == "gpt2":
        from transformers import GPT2LMHeadModel as cls  # lazy: start-up cost (transformers)
        kwargs: dict[str, Any] = {}
    elif name == "llama":
        from transformers import LlamaForCausalLM as cls  # lazy: start-up cost (transformers)
        kwargs = {}
    else:
        from transformers import BertModel as cls  # lazy: start-up cost (transformers)
        # Encoder only: the pooler's output is not part of the contract, and leaving it out keeps
        # its dead weights out of the exported program.
        kwargs = {"add_pooling_layer": False}

    torch.manual_seed(seed)
    hf = cls(config, **kwargs).to(torch.float32).eval()
    chosen = hf.config._attn_implementation
    if chosen != attn:  # pragma: no cover - guards against a transformers change
        raise RuntimeError(f"{name}: asked for attention {attn!r}, transformers chose {chosen!r}")
    return ZooModel(name, attn, hf).eval()


def example_inputs(name: str, *, seq_len: int = 128, seed: int = 0,
                   small: bool = False) -> tuple[torch.Tensor]:
    """Seeded example input for a zoo model: ``(input_ids,)``, int64 ``[1, seq_len]`` in the vocab.

    Uses a private generator, so it does not disturb the global RNG.
    """
    s = _sizes(name, small)
    if not 1 <= seq_len <= s.max_positions:
        raise ValueError(f"{name}: seq_len must be in [1, {s.max_positions}], got {seq_len}")
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, s.vocab, (1, seq_len), generator=gen, dtype=torch.long)
    return (ids,)


def parameter_count(model: nn.Module) -> int:
    """Number of distinct parameters (a tied weight counts once)."""
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "ATTN_IMPLS",
    "ZOO",
    "ZooModel",
    "build_model",
    "example_inputs",
    "make_config",
    "max_positions",
    "parameter_count",
    "vocab_size",
]
