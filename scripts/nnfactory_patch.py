"""Patch an unpacked intel-npu-acceleration-library 1.4.0 sdist so it builds and runs
against the OpenVINO wheel installed in the active venv (OpenVINO >= 2025).

Used by scripts/install_nnfactory.sh. Every patch is idempotent: a patch whose result is
already present is skipped, and a patch whose anchor text is missing is an error (the
sdist is not the one we know), so the script never half-patches silently.

    python scripts/nnfactory_patch.py <unpacked-sdist-dir>

Patches (each a one-line or one-block change of Intel's code):

1. backend/factory.py ``get_tensor_dtype`` and backend/tensor.py ``Tensor.dtype``:
   OpenVINO 2025 removed ``element::Type_t::undefined`` (the enum's first value), so
   every ``op_dtype`` code is one lower than their tables expect: an f32 output is taken
   for f16 and its output buffer is allocated at half size (OpenVINO writes past it).
2. backend/bindings.py: ``slice``, ``convolution``, ``avg_pooling`` and ``max_pooling``
   declare C++ ``size_t`` arguments as ``ctypes.c_int``. Past the sixth argument they go
   on the stack as 4 bytes with garbage above them; the C++ side reads a huge size and
   aborts (``std::length_error``). They become ``ctypes.c_size_t``.
3. include/.../inference.h ``compile_model``: with no NPU the library falls back to the
   CPU plugin, whose default inference precision is bf16 on CPUs with AVX512-BF16/AMX.
   The library's ``ov::Core`` is private to the C++ library, so the precision can only be
   pinned there: on the CPU device we set ``INFERENCE_PRECISION_HINT=f32`` (NPU
   compilation is untouched). Without it f32 graphs are off by ~1e-2 on such CPUs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


class PatchError(RuntimeError):
    pass


def _read(path: Path) -> tuple[str, str]:
    """Text with "\n" line ends, and the file's own line end (some files are CRLF)."""
    raw = path.read_bytes().decode()
    eol = "\r\n" if "\r\n" in raw else "\n"
    return raw.replace("\r\n", "\n"), eol


def _write(path: Path, text: str, eol: str) -> None:
    path.write_bytes(text.replace("\n", eol).encode())


def _patch(path: Path, old: str, new: str, what: str) -> str:
    text, eol = _read(path)
    if new in text:
        return f"already applied: {what}"
    if old not in text:
        raise PatchError(f"{path}: anchor for '{what}' not found; unknown sdist version?")
    _write(path, text.replace(old, new, 1), eol)
    return f"applied: {what}"


def _patch_bindings_size_t(path: Path) -> str:
    """Turn the c_int size arguments of four argtypes blocks into c_size_t."""
    text, eol = _read(path)
    marker = "# forge: size_t arguments"
    if marker in text:
        return "already applied: bindings.py size_t arguments"
    out = text
    for fn in ("slice", "convolution", "avg_pooling", "max_pooling"):
        m = re.search(rf"    lib\.{fn}\.argtypes = \[\n(.*?)\n    \]\n", out, re.S)
        if m is None:
            raise PatchError(f"{path}: argtypes block of '{fn}' not found")
        body = m.group(1)
        # A length argument is the c_int right before a c_u32_array pointer;
        # convolution's trailing `groups` is size_t too (the c_int before c_char_p).
        body = re.sub(
            r"ctypes\.c_int,(\n\s*c_u32_array)", r"ctypes.c_size_t,\1", body
        )
        if fn == "convolution":
            body = re.sub(
                r"ctypes\.c_int,(\n\s*ctypes\.c_char_p)", r"ctypes.c_size_t,\1", body
            )
        out = out[: m.start(1)] + body + out[m.end(1) :]
    out = out.replace(
        "def init_network_factory(lib: ctypes.CDLL):\n",
        f"def init_network_factory(lib: ctypes.CDLL):  {marker} patched\n",
        1,
    )
    if out == text or marker not in out:
        raise PatchError(f"{path}: size_t patch changed nothing")
    _write(path, out, eol)
    return "applied: bindings.py size_t arguments"


def main(root: Path) -> None:
    pkg = root / "intel_npu_acceleration_library"
    results = [
        _patch(
            pkg / "backend" / "factory.py",
            "        dtype_int = backend_lib.op_dtype(node)\n",
            "        dtype_int = backend_lib.op_dtype(node) + 1"
            "  # forge: OpenVINO>=2025 dropped Type_t::undefined\n",
            "factory.py op_dtype off-by-one",
        ),
        _patch(
            pkg / "backend" / "tensor.py",
            "        dtype_int = backend_lib.op_dtype(self.node)\n",
            "        dtype_int = backend_lib.op_dtype(self.node) + 1"
            "  # forge: OpenVINO>=2025 dropped Type_t::undefined\n",
            "tensor.py op_dtype off-by-one",
        ),
        _patch_bindings_size_t(pkg / "backend" / "bindings.py"),
        _patch(
            root / "include" / "intel_npu_acceleration_library" / "inference.h",
            "        // Compile model\n        compiled_model = core.compile_model(model, device);\n",
            "        // Compile model\n"
            "        if (device == \"CPU\") {  // forge: keep f32 graphs f32 on bf16-capable CPUs\n"
            "            core.set_property(device, ov::hint::inference_precision(ov::element::f32));\n"
            "        }\n"
            "        compiled_model = core.compile_model(model, device);\n",
            "inference.h CPU inference precision f32",
        ),
    ]
    for r in results:
        print(f"nnfactory_patch: {r}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        main(Path(sys.argv[1]))
    except (PatchError, OSError) as e:
        sys.exit(f"nnfactory_patch: error: {e}")
