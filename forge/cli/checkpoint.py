"""Checkpoint folders for `forge compile` and `forge generate`: a folder `save_pretrained` wrote (config.json +
*.safetensors) instead of a zoo name. The model is built from its config on the meta device
(`forge.init_empty_weights`: parameters cost no memory, computed buffers such as rotary tables stay real)
and compiled with `compile_meta`; its weights are bound from the files, memory-mapped, when the artifact is
loaded: never materialized twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class CheckpointError(ValueError):
    """A folder given as a model that is not a checkpoint folder, naming what is missing."""


def checkpoint_folder(name: str) -> Path | None:
    """`name` as a checkpoint folder (checked: config.json and *.safetensors), or None for a zoo name."""
    from forge.models import ZOO  # lazy: start-up cost

    path = Path(name)
    if name in ZOO and not path.is_dir():
        return None
    if not path.exists():
        if "/" in name or name.startswith("."):
            raise CheckpointError(f"{name}: no such checkpoint folder")
        raise CheckpointError(f"unknown model {name!r}: not a zoo model ({', '.join(ZOO)}) nor a checkpoint folder")
    if not path.is_dir():
        raise CheckpointError(f"{name}: not a folder (a checkpoint is a folder with config.json and *.safetensors)")
    if not (path / "config.json").is_file():
        raise CheckpointError(f"{name}: not a checkpoint folder: no config.json (save_pretrained writes it)")
    if not any(path.glob("*.safetensors")):
        raise CheckpointError(f"{name}: not a checkpoint folder: config.json but no *.safetensors weights")
    return path


def meta_model(folder: Path, *, causal_lm: bool = False) -> Any:
    """The transformers model of `folder`'s config.json, its parameters on the meta device."""
    import transformers  # lazy: start-up cost

    from forge.frontend.meta_weights import init_empty_weights

    try:
        config = transformers.AutoConfig.from_pretrained(folder)
    except Exception as err:  # a config transformers cannot read
        raise CheckpointError(f"{folder / 'config.json'}: {type(err).__name__}: {str(err).splitlines()[0]}") from None
    architectures = getattr(config, "architectures", None) or []
    classes = [getattr(transformers, a, None) for a in architectures]
    model_class = next((c for c in classes if c is not None), None)
    if causal_lm or model_class is None:
        model_class = transformers.AutoModelForCausalLM if causal_lm else transformers.AutoModel
        build = model_class.from_config
    else:
        build = model_class._from_config
    with init_empty_weights():
        model = build(config)
    return model.eval()
