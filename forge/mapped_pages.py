"""Give back resident pages nobody needs: memory-mapped weights once the device holds its own copy, and the
heap pages a compile freed and the work buffers torch's MKL keeps (`return_freed_heap`).

A loaded artifact maps its weights file (safetensors: nothing is copied), and the device compile reads
every weight into the compiled model (OpenVINO repacks matmul weights into its own layout). After that
the mapped pages are a second resident copy. `madvise(MADV_DONTNEED)` on a read-only *file* mapping drops
them and changes nothing else: a later read faults the page back in from the file (a gathered embedding
row, a weight a CPU step reads). On anonymous memory, or on a page of a private mapping that was written
(its copy is anonymous), the same call would lose data, so only page ranges inside one mapping of a file
with no anonymous pages (as /proc/self/smaps counts them: safetensors maps its files private and writable,
and nothing writes them) are advised; anywhere else (another OS, a tensor in ordinary memory) nothing happens.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SMAPS = Path("/proc/self/smaps")


def unwritten_file_mappings() -> list[tuple[int, int]]:
    """(start, end) of this process's mappings of files that hold no anonymous (written) page."""
    try:
        lines = SMAPS.read_text().splitlines()
    except OSError:
        return []
    found: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for line in lines:
        fields = line.split(maxsplit=5)
        if "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):  # a mapping's header line
            is_file = len(fields) == 6 and fields[5].startswith("/") and fields[4] != "0"
            current = tuple(int(x, 16) for x in fields[0].split("-")) if is_file else None  # type: ignore[assignment]
        elif current is not None and fields[0] == "Anonymous:":
            if fields[1] == "0":
                found.append(current)
            current = None
    return found


def release(tensors: Iterable[torch.Tensor]) -> int:
    """Drop the resident pages of `tensors` that lie in unwritten file mappings; the bytes advised."""
    mappings = unwritten_file_mappings()
    madvise = getattr(mmap, "MADV_DONTNEED", None)
    if not mappings or madvise is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE
    released = 0
    for t in tensors:
        start = t.data_ptr()
        lo = -(-start // page) * page  # whole pages only: a neighbour's bytes stay
        hi = (start + t.numel() * t.element_size()) // page * page
        if hi <= lo or not any(s <= lo and hi <= e for s, e in mappings):
            continue
        if libc.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), madvise) == 0:
            released += hi - lo
    return released


def return_freed_heap() -> int:
    """Give the heap's free pages back to the OS after a compile or a load: their temporaries (the export, the
    IR of every stage, the probes' activations) are freed by then, but glibc keeps the pages resident for later
    allocations (`malloc_trim(0)`), and so does torch's MKL its GEMM work buffers (`free_mkl_buffers`). Returns
    1 when glibc returned memory, 0 otherwise (nothing to return, or a C library without `malloc_trim`)."""
    free_mkl_buffers()
    return trim_heap()


def trim_heap() -> int:
    """glibc's `malloc_trim(0)`: the heap's free pages back to the OS (1 when memory was returned, 0 otherwise or
    without glibc). Alone, where no eager GEMM ran since the last `return_freed_heap` (a group's graph's first
    call)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return 0
    return int(trim(0))


MKL_FREE_BUFFERS = ("mkl_free_buffers", "mkl_serv_free_buffers")
"""MKL's call that frees the buffers its memory manager keeps for later calls: the documented name, then the
internal one torch's `libtorch_cpu` exports (it links MKL statically and exports only `mkl_serv_*`; a test
names it, so a torch that drops it fails there rather than silently keeping the buffers)."""


def mkl_library() -> ctypes.CDLL | None:
    """The loaded library holding torch's MKL (`libtorch_cpu`), or None (torch not imported, or built without it).
    Opening an already loaded library by path returns the loaded one: nothing new is loaded."""
    torch_module = sys.modules.get("torch")
    if torch_module is None or not getattr(torch_module, "__file__", None):
        return None
    path = Path(torch_module.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        return ctypes.CDLL(str(path)) if path.exists() else None
    except OSError:
        return None


def free_mkl_buffers() -> bool:
    """Free the work buffers torch's MKL keeps after a GEMM (eager matmuls: the dynamic facade's padding probes,
    an accuracy check, a CPU step). GPT-2 12L's eager forward at 128 tokens leaves 27 MiB resident after `gc`
    and `malloc_trim`; this call gives back 25 of them. MKL allocates them again on its next GEMM, so this runs
    after a compile or a load only, when no GEMM is running. True when the call was found and made."""
    library = mkl_library()
    for name in MKL_FREE_BUFFERS:
        call = getattr(library, name, None) if library is not None else None
        if call is not None:
            call.restype = None
            call()
            return True
    return False
