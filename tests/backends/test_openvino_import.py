"""The openvino runtime imports openvino without its model-conversion tool (`openvino.tools.ovc`,
~140 ms of a cold compile), and `openvino.convert_model` still resolves to the real function.
One fresh interpreter: the tool must not have been imported by anything before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from backends.nnfactory.runtime import get_runtime
rt = get_runtime("openvino", "CPU")
assert "openvino.tools.ovc" not in sys.modules, "the runtime imported openvino's conversion tool"
import openvino as ov
convert = ov.convert_model
from openvino.tools.ovc import convert_model
from openvino import convert_model as again
assert convert is convert_model is again, (convert, convert_model)
assert not hasattr(ov, "no_such_name")
print("ok")
"""


def test_runtime_skips_openvino_conversion_tool_and_convert_model_still_resolves():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
