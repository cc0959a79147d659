"""`forge compile` and `forge generate` on a checkpoint folder (config.json + safetensors, as save_pretrained writes):
the small zoo Llama saved to tmp_path, built from its config on the meta device, its weights memory-mapped.
The compiled logits match eager; the generated tokens are eager greedy decoding's; a folder that is not a
checkpoint is a one-line error naming what is missing."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

import forge
from forge.cli.main import main
from forge.models import build_model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    hf = build_model("llama", small=True).hf.eval()
    folder = tmp_path_factory.mktemp("ckpt") / "ckpt_llama"
    hf.save_pretrained(folder)
    return hf, folder


def test_compile_checkpoint_folder(checkpoint, tmp_path, capsys):
    hf, folder = checkpoint
    out = tmp_path / "artifact"
    assert main(["compile", str(folder), "--seq-len", "8", "--save", str(out), "--quiet"]) == 0
    assert "memory-mapped" in capsys.readouterr().out
    compiled = forge.load(out)
    assert compiled.report.get("weights", "f32") in ("f32", None)
    ids = torch.randint(0, hf.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        expected = hf(ids).logits
    got = compiled(ids).logits
    assert (got - expected).abs().max().item() < 1e-4
    # a fresh process loads it without transformers' cache registration (modeling_utils, executorch: ~3-5 s of
    # the load), which only a saved output holding a KV cache needs; the output class comes back all the same
    code = (
        f"import sys, forge; m = forge.load({str(out)!r}); "
        "print(m.signature.out_spec.type.__name__, 'transformers.integrations.executorch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=".")
    assert done.stdout.split() == [type(hf(ids)).__name__, "False"]


@pytest.mark.parametrize("share", ["yes", "no"])
def test_generate_checkpoint_folder(checkpoint, capsys, share):
    hf, folder = checkpoint
    assert main(["generate", str(folder), "--prompt-len", "8", "--new-tokens", "6", "--quiet",
                 "--share-weights", share]) == 0
    out = capsys.readouterr().out
    # both graphs one program (its compile time; the decode step on top where the cache is large), or a program each
    said = (r", device program [\d.]+ s; one device program( with the decode step on top \(each prefill call runs "
            r"it too: the cache is not copied\))?" if share == "yes" else "; a device program per graph")
    assert re.search(rf"^compile: .*{said}, KV cache [\d.]+% of the weights\)", out, re.M)
    tokens = [int(t) for t in re.search(r"tokens\[0\]: ([\d ]+)", out).group(1).split()]
    ids = torch.randint(0, hf.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():  # eager greedy decoding, no cache
        for _ in range(6):
            ids = torch.cat([ids, hf(ids).logits[:, -1:].argmax(-1)], dim=1)
    assert tokens == ids[0, 8:].tolist()


@pytest.mark.parametrize("command", ["compile", "generate"])
def test_not_a_checkpoint(tmp_path, capsys, command):
    assert main([command, str(tmp_path), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"forge: error: {tmp_path}: not a checkpoint folder: no config.json (save_pretrained writes it)"
    (tmp_path / "config.json").write_text("{}")
    assert main([command, str(tmp_path), "--quiet"]) == 1
    assert "config.json but no *.safetensors" in capsys.readouterr().err
