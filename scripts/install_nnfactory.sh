#!/usr/bin/env bash
# Install Intel's NNFactory (intel-npu-acceleration-library 1.4.0, the last release,
# sdist only) into the active venv, built against the venv's own OpenVINO wheel, so
# Forge's `nnfactory` runtime (backends/nnfactory/runtime/intel_runtime.py) can run.
#
#   scripts/install_nnfactory.sh [--force]
#
# Python: $PYTHON, else $VIRTUAL_ENV/bin/python, else `python3` (must be a venv).
# Build cache: $FORGE_NNFACTORY_BUILD_DIR (default ~/.cache/forge-nnfactory): the sdist
# is downloaded there once (or copied from $FORGE_NNFACTORY_SDIST, for offline machines);
# sources are re-unpacked and re-patched on every build.
#
# Unattended and idempotent: when the installed build matches (same sdist, same patch
# script, same OpenVINO version; the stamp is written only after a passing smoke test)
# it does nothing. --force rebuilds. Exits non-zero with a message naming the failed step.
#
# What it does: pip download the sdist (sha256 pinned) -> unpack -> patch
# (scripts/nnfactory_patch.py: op_dtype off-by-one on OpenVINO>=2025, c_int/size_t
# ctypes mismatches, f32 precision on the CPU fallback) -> CMake build with no OpenVINO
# download (a toolchain file points OV_LIBRARY_URL at an empty dir and OpenVINO_DIR at
# the wheel's cmake dir) via `pip install --no-build-isolation --no-deps` -> symlink the
# wheel's OpenVINO libraries into <pkg>/lib (bindings.py dlopens <pkg>/lib/libopenvino.so)
# -> smoke test in a subprocess.
set -euo pipefail

PKG_VERSION=1.4.0
SDIST=intel_npu_acceleration_library-${PKG_VERSION}.tar.gz
SDIST_SHA256=85bc37169189a0bfdb536a74de454925a4750adc1000d29a6c87de1f1a3a8d7d

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PATCHER="$HERE/nnfactory_patch.py"
START=$SECONDS
STEP="start"

fail() { echo "install_nnfactory: error: $*" >&2; exit 1; }
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "install_nnfactory: FAILED during: $STEP (exit $rc)" >&2; fi' EXIT
step() { STEP="$*"; echo "install_nnfactory: $*"; }

FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) fail "unknown argument '$arg' (usage: $0 [--force])" ;;
  esac
done

step "checking the Python environment"
PY="${PYTHON:-}"
if [ -z "$PY" ] && [ -n "${VIRTUAL_ENV:-}" ]; then PY="$VIRTUAL_ENV/bin/python"; fi
PY="${PY:-python3}"
command -v "$PY" >/dev/null 2>&1 || fail "python '$PY' not found (set PYTHON or activate the venv)"
# The build runs in other directories: make a relative path absolute (without resolving the
# venv's symlink, which would leave the venv).
case "$PY" in
  /*) ;;
  */*) PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")" ;;
esac
"$PY" -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' \
  || fail "'$PY' is not a virtualenv python; activate the project venv (. .venv/bin/activate) or set PYTHON"
OV_INFO="$("$PY" -c 'import os, openvino; print(openvino.__version__.split("-")[0]); print(os.path.dirname(openvino.__file__))' 2>/dev/null)" \
  || fail "openvino is not importable from '$PY' (pip install openvino)"
OV_VERSION="$(echo "$OV_INFO" | sed -n 1p)"
OV_DIR="$(echo "$OV_INFO" | sed -n 2p)"
"$PY" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("numpy") and u.find_spec("torch")))' \
  || fail "numpy and torch must be installed in the venv"
[ -f "$OV_DIR/cmake/OpenVINOConfig.cmake" ] || fail "$OV_DIR/cmake/OpenVINOConfig.cmake missing: this openvino wheel has no developer files"
OV_LIB="$(cd "$OV_DIR/libs" && ls libopenvino.so.[0-9]* 2>/dev/null | head -n1)"
[ -n "$OV_LIB" ] || fail "no libopenvino.so.<version> in $OV_DIR/libs"
STAMP_TEXT="intel-npu-acceleration-library==$PKG_VERSION openvino==$OV_VERSION patch=$(sha256sum "$PATCHER" | cut -c1-16)"

pkg_dir() {
  "$PY" -c 'import importlib.util as u; s = u.find_spec("intel_npu_acceleration_library"); print(s.submodule_search_locations[0] if s else "")'
}

# Self-contained smoke test (the package __init__ is bypassed as in intel_runtime.py):
# f32 matmul (dtype and precision patches) and a strided slice (size_t patch).
smoke_test() {
  local pkg="$1"
  "$PY" - "$pkg" <<'EOF'
import atexit, importlib, importlib.machinery, importlib.util, os, shutil, sys, tempfile, warnings
import numpy as np
root = sys.argv[1]
for name, path in (("intel_npu_acceleration_library", root),
                   ("intel_npu_acceleration_library.backend", os.path.join(root, "backend"))):
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [path]
    sys.modules[name] = importlib.util.module_from_spec(spec)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    bindings = importlib.import_module("intel_npu_acceleration_library.backend.bindings")
    sys.modules["intel_npu_acceleration_library.backend"].lib = bindings.lib
    factory = importlib.import_module("intel_npu_acceleration_library.backend.factory")
workdir = tempfile.mkdtemp(prefix="forge-nnfactory-smoke-")  # compile() writes ./cache
atexit.register(shutil.rmtree, workdir, True)
os.chdir(workdir)
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 256)).astype(np.float32)
w = rng.standard_normal((128, 256)).astype(np.float32)
f = factory.NNFactory(device="CPU")
inp = f.parameter([4, 256], np.float32)
mm = f.matmul(inp, f.constant(w), False, True)
f.slice(mm, [0, 1], [4, 128], [1, 2])
f.compile()
got = f.run(x)
ref = (x @ w.T)[:, 1::2]
assert got.dtype == np.float32 and got.shape == ref.shape, (got.dtype, got.shape)
err = float(np.abs(got - ref).max())
assert err < 1e-3, f"f32 matmul error {err} (bf16 inference?)"
print(f"install_nnfactory: smoke test ok (max abs err {err:.2e})")
EOF
}

PKG="$(pkg_dir)"
if [ "$FORCE" = 0 ] && [ -n "$PKG" ] && [ -f "$PKG/lib/.forge-nnfactory-stamp" ] \
   && [ "$(cat "$PKG/lib/.forge-nnfactory-stamp")" = "$STAMP_TEXT" ]; then
  if [ -f "$PKG/lib/libintel_npu_acceleration_library.so" ] && [ -e "$PKG/lib/libopenvino.so" ]; then
    echo "install_nnfactory: already installed ($STAMP_TEXT); nothing to do. --force rebuilds."
    exit 0
  fi
  echo "install_nnfactory: the installed build is incomplete; rebuilding"
fi

step "checking build tools"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 \
  || fail "no C++ compiler (c++/g++) on PATH; install one (e.g. apt-get install g++)"
export PATH="$(dirname "$PY"):$PATH"   # tools pip-installed into the venv (cmake, ninja)
cmake_ok() {  # CMake >= 3.21 reads CMAKE_TOOLCHAIN_FILE from the environment
  local v
  v="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
  [ -n "$v" ] && set -- $v && { [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 21 ]; }; }
}
if ! cmake_ok; then
  step "installing cmake into the venv (none >= 3.21 on PATH)"
  "$PY" -m pip install --quiet 'cmake>=3.21' || fail "pip install cmake failed"
  cmake_ok || fail "cmake >= 3.21 still not usable after pip install"
fi
if ! command -v make >/dev/null 2>&1; then
  if command -v ninja >/dev/null 2>&1; then export CMAKE_GENERATOR=Ninja
  else fail "neither make nor ninja on PATH"; fi
fi
if ! "$PY" -c 'import setuptools, wheel' 2>/dev/null; then
  step "installing setuptools and wheel into the venv"
  "$PY" -m pip install --quiet setuptools wheel || fail "pip install setuptools wheel failed"
fi

BUILD="${FORGE_NNFACTORY_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/forge-nnfactory}"
mkdir -p "$BUILD/dist"
if [ ! -f "$BUILD/dist/$SDIST" ] && [ -n "${FORGE_NNFACTORY_SDIST:-}" ]; then
  step "using the local sdist $FORGE_NNFACTORY_SDIST"
  cp "$FORGE_NNFACTORY_SDIST" "$BUILD/dist/$SDIST" || fail "cannot copy $FORGE_NNFACTORY_SDIST"
fi
if [ ! -f "$BUILD/dist/$SDIST" ]; then
  step "downloading $SDIST from PyPI"
  "$PY" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation \
      -d "$BUILD/dist" "intel-npu-acceleration-library==$PKG_VERSION" \
    || fail "pip download of intel-npu-acceleration-library==$PKG_VERSION failed"
fi
echo "$SDIST_SHA256  $BUILD/dist/$SDIST" | sha256sum --check --status \
  || { rm -f "$BUILD/dist/$SDIST"; fail "sha256 mismatch for $SDIST (removed; rerun to download again)"; }

step "unpacking and patching"
rm -rf "$BUILD/src" "$BUILD/empty-openvino"
mkdir -p "$BUILD/src" "$BUILD/empty-openvino"
tar -xzf "$BUILD/dist/$SDIST" -C "$BUILD/src"
SRC="$BUILD/src/intel_npu_acceleration_library-$PKG_VERSION"
"$PY" "$PATCHER" "$SRC"

# The sdist's CMakeLists FetchContent-downloads an OpenVINO 2024.4 archive unless
# OV_LIBRARY_URL is set; an empty local dir satisfies it and find_package(OpenVINO)
# then takes OpenVINO_DIR, i.e. the venv's wheel (headers, cmake config, libraries).
cat > "$BUILD/toolchain.cmake" <<EOF
set(OV_LIBRARY_URL "$BUILD/empty-openvino" CACHE STRING "no OpenVINO download" FORCE)
set(OpenVINO_DIR "$OV_DIR/cmake" CACHE PATH "the venv's OpenVINO wheel" FORCE)
EOF
export CMAKE_TOOLCHAIN_FILE="$BUILD/toolchain.cmake"

step "building and installing (log: $BUILD/build.log)"
if ! (cd "$SRC" && "$PY" -m pip install --no-build-isolation --no-deps --no-cache-dir \
        --force-reinstall --verbose . ) >"$BUILD/build.log" 2>&1; then
  tail -n 40 "$BUILD/build.log" >&2
  fail "build failed; full log in $BUILD/build.log"
fi
grep -q "OpenVINO library URL: $BUILD/empty-openvino" "$BUILD/build.log" \
  || fail "CMake did not take the local OV_LIBRARY_URL (see $BUILD/build.log)"

step "linking the OpenVINO wheel libraries into the package"
PKG="$(pkg_dir)"
[ -n "$PKG" ] && [ -f "$PKG/lib/libintel_npu_acceleration_library.so" ] \
  || fail "installed package has no lib/libintel_npu_acceleration_library.so"
for f in "$OV_DIR"/libs/*.so*; do ln -sfn "$f" "$PKG/lib/$(basename "$f")"; done
ln -sfn "$OV_LIB" "$PKG/lib/libopenvino.so"

step "smoke test"
smoke_test "$PKG" || fail "smoke test failed for the fresh build"
echo "$STAMP_TEXT" > "$PKG/lib/.forge-nnfactory-stamp"
echo "install_nnfactory: installed into $PKG in $((SECONDS - START))s"
