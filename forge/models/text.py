"""Text families: decoders (attention, state-space and recurrent), encoders, encoder-decoders and
mixtures of experts.

The first three (``gpt2``, ``llama``, ``bert``) are the original zoo; their configurations,
weights and inputs are unchanged (other tests pin their numbers).  Every ``small`` variant is
2 layers, hidden 64, 4 heads (2 KV heads
where the family has grouped-query attention), intermediate 128, vocab 512, 128 positions.  The
default sizes are benchmark sizes: the published base sizes where they are CPU-friendly (GPT-2
124M, BERT-base, DistilBERT, RoBERTa-base, OPT-125m, GPT-Neo-125M, T5-small, BART-base, ConvBERT-base,
Funnel small-base), otherwise a scaled-down member of the family (12 layers, hidden 768-1024, vocab
32000; MoE: 8 experts, 2 active; Mamba and RWKV: fewer layers at their 130M/169M widths, as their
scans are unrolled over the tokens) so that building, exporting and compiling take seconds to a
minute on a CPU.

``mamba`` (selective state-space scan, softplus/log1p of the step sizes) and ``rwkv`` (time-mixing
recurrence, its state written back with ``select_scatter``) are the recurrent decoders; ``funnel``
pools its sequence between blocks (``slice_scatter`` into its relative-position tables) and
``convbert`` mixes span-based dynamic convolutions into attention (an ``unfold`` by advanced
indexing).

MoE families use transformers' ``experts_implementation="batched_mm"``: the eager default routes
tokens with ``nonzero``/``where`` (data-dependent shapes, not exportable to a static graph);
``batched_mm`` gathers each token's top-k expert weights and runs batched matmuls, all static.
The gathered weights are ``tokens x top_k x 2 * expert_intermediate x hidden`` floats per layer
(0.8 GB for 128 tokens at the default MoE sizes), which is why those sizes are modest: Mixtral's
published 14336-wide experts (hidden 4096) would need ~120 GB at 128 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.models.base import (
    ATTN_IMPLS,
    NO_ATTENTION,
    Family,
    Seq2SeqZooModel,
    ZooModel,
    check_seq_len,
    hf_class,
    text_ids,
)

SMALL: Mapping[str, Any] = {
    "vocab": 512, "hidden": 64, "layers": 2, "heads": 4, "kv_heads": 4, "intermediate": 128,
    "max_positions": 128,
}
SMALL_GQA: Mapping[str, Any] = {**SMALL, "kv_heads": 2}


def _sizes(vocab: int, hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int,
           max_positions: int, **extra: Any) -> dict[str, Any]:
    return {"vocab": vocab, "hidden": hidden, "layers": layers, "heads": heads, "kv_heads": kv_heads,
            "intermediate": intermediate, "max_positions": max_positions, **extra}


# --- the original three ----------------------------------------------------------------------------


def _gpt2_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("GPT2Config")(
        vocab_size=s["vocab"], n_positions=s["max_positions"], n_embd=s["hidden"], n_layer=layers,
        n_head=s["heads"], n_inner=s["intermediate"],
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        use_cache=False, tie_word_embeddings=True,
        # GPT-2 uses its last token as BOS/EOS; keep that true for the small vocab.
        bos_token_id=s["vocab"] - 1, eos_token_id=s["vocab"] - 1,
    )


def _llama_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("LlamaConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["intermediate"],
        num_hidden_layers=layers, num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"], max_position_embeddings=s["max_positions"],
        hidden_act="silu", rms_norm_eps=1e-6, attention_dropout=0.0,
        use_cache=False, tie_word_embeddings=False,
    )


def _bert_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("BertConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=layers,
        num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
        max_position_embeddings=s["max_positions"],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, use_cache=False,
    )


# --- decoders --------------------------------------------------------------------------------------


def _opt_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("OPTConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=layers, ffn_dim=s["intermediate"],
        num_attention_heads=s["heads"], max_position_embeddings=s["max_positions"],
        word_embed_proj_dim=s["hidden"], do_layer_norm_before=True,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, layerdrop=0.0,
        use_cache=False, pad_token_id=1, bos_token_id=2, eos_token_id=2,
    )


def _gpt_neo_config(s: Mapping[str, Any], layers: int) -> Any:
    # Alternating global / local (sliding-window) attention, as in the published models.
    types = ["global", "local"] * ((layers + 1) // 2)
    return hf_class("GPTNeoConfig")(
        vocab_size=s["vocab"], max_position_embeddings=s["max_positions"], hidden_size=s["hidden"],
        num_layers=layers, attention_types=[[[t], 1] for t in types[:layers]], num_heads=s["heads"],
        intermediate_size=s["intermediate"], window_size=s["window"],
        embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0,
        use_cache=False, bos_token_id=s["vocab"] - 1, eos_token_id=s["vocab"] - 1,
    )


def _llama_like(config_class: str, s: Mapping[str, Any], layers: int, **extra: Any) -> Any:
    """Mistral / Qwen2 / Phi-3 / Gemma / Mixtral / Qwen2-MoE: the Llama-style config fields."""
    return hf_class(config_class)(
        vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["intermediate"],
        num_hidden_layers=layers, num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
        max_position_embeddings=s["max_positions"], attention_dropout=0.0, use_cache=False, **extra,
    )


def _mistral_config(s: Mapping[str, Any], layers: int) -> Any:
    return _llama_like("MistralConfig", s, layers, sliding_window=s["window"], tie_word_embeddings=False)


def _qwen2_config(s: Mapping[str, Any], layers: int) -> Any:
    return _llama_like("Qwen2Config", s, layers, use_sliding_window=False, tie_word_embeddings=True)


def _phi3_config(s: Mapping[str, Any], layers: int) -> Any:
    last = s["vocab"] - 1
    return _llama_like("Phi3Config", s, layers, original_max_position_embeddings=s["max_positions"],
                       resid_pdrop=0.0, embd_pdrop=0.0, bos_token_id=1, eos_token_id=last, pad_token_id=last,
                       tie_word_embeddings=False)


def _gemma_config(s: Mapping[str, Any], layers: int) -> Any:
    return _llama_like("GemmaConfig", s, layers, head_dim=s["hidden"] // s["heads"],
                       hidden_activation="gelu_pytorch_tanh", pad_token_id=0, eos_token_id=1, bos_token_id=2)


# --- mixtures of experts ----------------------------------------------------------------------------


def _mixtral_config(s: Mapping[str, Any], layers: int) -> Any:
    from forge.frontend.export import STATIC_EXPERTS  # lazy: torch.export, not for listing the zoo

    return _llama_like("MixtralConfig", s, layers, num_local_experts=s["experts"],
                       num_experts_per_tok=s["top_k"], router_jitter_noise=0.0, sliding_window=None,
                       output_router_logits=False, experts_implementation=STATIC_EXPERTS)


def _qwen2_moe_config(s: Mapping[str, Any], layers: int) -> Any:
    from forge.frontend.export import STATIC_EXPERTS  # lazy: torch.export, not for listing the zoo

    return _llama_like("Qwen2MoeConfig", s, layers, num_experts=s["experts"], num_experts_per_tok=s["top_k"],
                       moe_intermediate_size=s["moe_intermediate"],
                       shared_expert_intermediate_size=s["intermediate"], decoder_sparse_step=1,
                       mlp_only_layers=[], use_sliding_window=False, norm_topk_prob=False,
                       output_router_logits=False, experts_implementation=STATIC_EXPERTS)


# --- recurrent and state-space decoders ---------------------------------------------------------------


def _mamba_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("MambaConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], state_size=s["state"], num_hidden_layers=layers,
        expand=2, conv_kernel=4, use_cache=False, tie_word_embeddings=True,
        pad_token_id=0, bos_token_id=0, eos_token_id=0,
    )


def _rwkv_config(s: Mapping[str, Any], layers: int) -> Any:
    # rescale_every=0: in eval mode RWKV otherwise divides its weights in place on the first call
    # (every 6 layers), which an exported graph cannot do.
    return hf_class("RwkvConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=layers,
        attention_hidden_size=s["hidden"], intermediate_size=s["intermediate"], context_length=s["max_positions"],
        rescale_every=0, use_cache=False, tie_word_embeddings=False, bos_token_id=0, eos_token_id=0,
    )


# --- encoders ---------------------------------------------------------------------------------------


def _distilbert_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("DistilBertConfig")(
        vocab_size=s["vocab"], max_position_embeddings=s["max_positions"], n_layers=layers, n_heads=s["heads"],
        dim=s["hidden"], hidden_dim=s["intermediate"], dropout=0.0, attention_dropout=0.0,
    )


def _roberta_config(s: Mapping[str, Any], layers: int) -> Any:
    # RoBERTa's positions start after the padding index (1): the table has 2 extra rows.
    return hf_class("RobertaConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=layers, num_attention_heads=s["heads"],
        intermediate_size=s["intermediate"], max_position_embeddings=s["max_positions"] + 2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, use_cache=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2,
    )


def _funnel_config(s: Mapping[str, Any], layers: int) -> Any:
    # `layers` blocks of `block` layers each; every block after the first pools the sequence by 2.
    return hf_class("FunnelConfig")(
        vocab_size=s["vocab"], block_sizes=[s["block"]] * layers, d_model=s["hidden"], n_head=s["heads"],
        d_head=s["hidden"] // s["heads"], d_inner=s["intermediate"], max_position_embeddings=s["max_positions"],
        hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
    )


def _convbert_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("ConvBertConfig")(
        vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=layers, num_attention_heads=s["heads"],
        intermediate_size=s["intermediate"], max_position_embeddings=s["max_positions"],
        embedding_size=s["hidden"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, head_ratio=2,
        conv_kernel_size=9,
    )


# --- encoder-decoders -------------------------------------------------------------------------------


def _t5_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("T5Config")(
        vocab_size=s["vocab"], d_model=s["hidden"], d_kv=s["hidden"] // s["heads"], d_ff=s["intermediate"],
        num_layers=layers, num_decoder_layers=layers, num_heads=s["heads"],
        relative_attention_num_buckets=32, relative_attention_max_distance=s["max_positions"],
        dropout_rate=0.0, feed_forward_proj="relu", use_cache=False, tie_word_embeddings=True,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0,
    )


def _bart_config(s: Mapping[str, Any], layers: int) -> Any:
    return hf_class("BartConfig")(
        vocab_size=s["vocab"], d_model=s["hidden"], encoder_layers=layers, decoder_layers=layers,
        encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"],
        encoder_ffn_dim=s["intermediate"], decoder_ffn_dim=s["intermediate"],
        max_position_embeddings=s["max_positions"], dropout=0.0, attention_dropout=0.0,
        activation_dropout=0.0, encoder_layerdrop=0.0, decoder_layerdrop=0.0, use_cache=False,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
    )


# --- wrappers and inputs ----------------------------------------------------------------------------


def _causal_lm(name: str, attn: str, hf: Any) -> ZooModel:
    return ZooModel(name, attn, hf, output="logits", call_kwargs={"use_cache": False})


def _encoder(name: str, attn: str, hf: Any) -> ZooModel:
    return ZooModel(name, attn, hf, output="last_hidden_state")


def _seq2seq(name: str, attn: str, hf: Any) -> ZooModel:
    return Seq2SeqZooModel(name, attn, hf, output="logits", call_kwargs={"use_cache": False})


def _ids(name: str):
    def make(s: Mapping[str, Any], seq_len: int, gen: Any) -> tuple[Any, ...]:
        check_seq_len(name, s, seq_len)
        return (text_ids(s, seq_len, gen),)

    return make


def _ids_pair(name: str):
    def make(s: Mapping[str, Any], seq_len: int, gen: Any) -> tuple[Any, ...]:
        check_seq_len(name, s, seq_len)
        return text_ids(s, seq_len, gen), text_ids(s, seq_len, gen)

    return make


def _family(name: str, kind: str, cls: str, config, small: Mapping[str, Any], default: Mapping[str, Any],
            doc: str, *, attn: tuple[str, ...] = ATTN_IMPLS, **kw: Any) -> Family:
    if kind in ("decoder", "moe"):
        wrap, inputs, output, make = _causal_lm, ("input_ids",), "logits", _ids(name)
    elif kind == "encoder":
        wrap, inputs, output, make = _encoder, ("input_ids",), "hidden", _ids(name)
    else:
        wrap, inputs, output, make = _seq2seq, ("input_ids", "decoder_input_ids"), "logits", _ids_pair(name)
    return Family(name=name, kind=kind, hf_class=cls, attn_impls=attn, inputs=inputs, output=output,
                  small=small, default=default, build_config=config, make_inputs=make, wrap=wrap,
                  sizes_doc=doc, **kw)


# Benchmark sizes.  GPT-2 and BERT are the published base sizes.  The Llama-style decoder is a
# scaled-down Llama (no public checkpoint is needed, only the architecture): head_dim 64 like
# GPT-2/BERT, 4 query heads per KV head, intermediate ~2.75x hidden (the Llama SwiGLU ratio,
# rounded to a multiple of 256).  ~200M parameters: big enough to be a realistic NPU workload,
# small enough to build, export and compile in seconds on a CPU.
_SCALED_LLAMA = _sizes(32000, 1024, 12, 16, 4, 2816, 2048)

FAMILIES: tuple[Family, ...] = (
    _family("gpt2", "decoder", "GPT2LMHeadModel", _gpt2_config, SMALL,
            _sizes(50257, 768, 12, 12, 12, 3072, 1024), "GPT-2 124M (12 x 768)"),
    _family("llama", "decoder", "LlamaForCausalLM", _llama_config, SMALL_GQA, _SCALED_LLAMA,
            "scaled-down Llama, ~200M (12 x 1024, 16 heads / 4 KV heads)"),
    # Encoder only: the pooler's output is not part of the contract, and leaving it out keeps its
    # dead weights out of the exported program.
    _family("bert", "encoder", "BertModel", _bert_config, SMALL, _sizes(30522, 768, 12, 12, 12, 3072, 512),
            "BERT-base (12 x 768)", hf_kwargs={"add_pooling_layer": False}),
    _family("opt", "decoder", "OPTForCausalLM", _opt_config, SMALL, _sizes(50272, 768, 12, 12, 12, 3072, 2048),
            "OPT-125m (12 x 768)"),
    _family("gpt-neo", "decoder", "GPTNeoForCausalLM", _gpt_neo_config, {**SMALL, "window": 8},
            _sizes(50257, 768, 12, 12, 12, 3072, 2048, window=256),
            "GPT-Neo-125M (12 x 768, local attention window 256; small: window 8)", attn=("eager",)),
    _family("mistral", "decoder", "MistralForCausalLM", _mistral_config, {**SMALL_GQA, "window": 8},
            {**_SCALED_LLAMA, "intermediate": 3584, "window": 512},
            "scaled-down Mistral (12 x 1024, 16 / 4 KV heads, sliding window 512; small: window 8)"),
    _family("qwen2", "decoder", "Qwen2ForCausalLM", _qwen2_config, SMALL_GQA, _sizes(32000, 896, 12, 14, 2, 4864, 2048),
            "Qwen2-0.5B widths (12 of its 24 layers x 896, 14 / 2 KV heads, vocab cut to 32000)"),
    _family("phi3", "decoder", "Phi3ForCausalLM", _phi3_config, SMALL, _sizes(32064, 1024, 12, 16, 16, 2816, 2048),
            "scaled-down Phi-3 (12 x 1024, fused qkv / gate_up projections)"),
    _family("gemma", "decoder", "GemmaForCausalLM", _gemma_config, {**SMALL_GQA, "kv_heads": 1},
            _sizes(32000, 1024, 12, 8, 1, 4096, 2048),
            "scaled-down Gemma (12 x 1024, multi-query attention, GeGLU, vocab cut to 32000)"),
    _family("mamba", "decoder", "MambaForCausalLM", _mamba_config, {**SMALL, "state": 8},
            _sizes(50280, 768, 8, 1, 1, 1536, 2048, state=16),
            "Mamba-130M widths (8 of its 24 layers x 768, state 16; small: 2 x 64, state 8)",
            attn=(NO_ATTENTION,)),
    # small: two layers (its time loop is unrolled over the sequence, ~600 ops a layer at 16 tokens), as
    # RwkvPreTrainedModel._init_weights divides by num_hidden_layers - 1
    _family("rwkv", "decoder", "RwkvForCausalLM", _rwkv_config, SMALL,
            _sizes(50277, 768, 6, 1, 1, 3072, 1024),
            "RWKV-4-169M widths (6 of its 12 layers x 768; small: 2 x 64)", attn=(NO_ATTENTION,)),
    _family("distilbert", "encoder", "DistilBertModel", _distilbert_config, SMALL,
            _sizes(30522, 768, 6, 12, 12, 3072, 512), "DistilBERT-base (6 x 768)"),
    _family("roberta", "encoder", "RobertaModel", _roberta_config, SMALL, _sizes(50265, 768, 12, 12, 12, 3072, 512),
            "RoBERTa-base (12 x 768)", hf_kwargs={"add_pooling_layer": False}),
    _family("funnel", "encoder", "FunnelBaseModel", _funnel_config, {**SMALL, "block": 1},
            _sizes(30522, 768, 3, 12, 12, 3072, 512, block=4),
            "Funnel-Transformer small-base (3 blocks of 4 layers x 768, pooled by 2 per block; small: 2 blocks of 1)",
            attn=("eager",)),
    _family("convbert", "encoder", "ConvBertModel", _convbert_config, SMALL, _sizes(30522, 768, 12, 12, 12, 3072, 512),
            "ConvBERT-base (12 x 768, half the heads are span-based dynamic convolutions)", attn=("eager",)),
    _family("t5", "encoder-decoder", "T5ForConditionalGeneration", _t5_config, SMALL,
            _sizes(32128, 512, 6, 8, 8, 2048, 512), "T5-small (6 + 6 layers x 512)"),
    _family("bart", "encoder-decoder", "BartForConditionalGeneration", _bart_config, SMALL,
            _sizes(50265, 768, 6, 12, 12, 3072, 1024), "BART-base (6 + 6 layers x 768)"),
    _family("mixtral", "moe", "MixtralForCausalLM", _mixtral_config,
            {**SMALL_GQA, "experts": 4, "top_k": 2},
            {**_sizes(32000, 512, 8, 8, 2, 768, 2048), "experts": 8, "top_k": 2},
            "scaled-down Mixtral (8 x 512, 8 / 2 KV heads, 8 experts of 768, top-2; small: 4 experts, top-2)"),
    _family("qwen2-moe", "moe", "Qwen2MoeForCausalLM", _qwen2_moe_config,
            {**SMALL_GQA, "experts": 4, "top_k": 2, "moe_intermediate": 64},
            {**_sizes(32000, 768, 8, 12, 4, 2048, 2048), "experts": 8, "top_k": 2, "moe_intermediate": 512},
            "scaled-down Qwen2-MoE (8 x 768, 8 experts of 512 + a shared expert, top-2; small: 4 experts)"),
)
