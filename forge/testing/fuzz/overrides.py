"""The overloads whose arguments are related beyond what their names tell: a function per family
that draws their tensors (and the arguments tied to them) together, as presets `raw_case` takes
before it draws the rest from the schema. Matrix products get agreeing inner dimensions,
convolutions and pools sizes their kernels fit, scatters indices within bounds, linear algebra
well-conditioned square matrices, and so on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from hypothesis import strategies as st

from dialects.aten_table import SIGNATURES
from forge.testing.fuzz.values import any_dtype, float_dtype, shapes, tensors


class Context:
    """What later arguments of one draw depend on: the first tensor and the dims drawn so far."""

    def __init__(self, op: str):
        self.op = op
        self.base: tuple[int, ...] | None = None
        self.dtype: torch.dtype | None = None
        self.dim: int | None = None
        self.preset: dict[str, Any] = {}
        """Arguments an override drew (values, or strategies drawn when their argument comes)."""

    @property
    def rank(self) -> int:
        return len(self.base) if self.base is not None else 1

    def size_at_dim(self) -> int:
        if self.base is None or not self.base:
            return 1
        d = self.dim if self.dim is not None and -self.rank <= self.dim < self.rank else 0
        return self.base[d]


Override = Callable[[Any, Context], None]
OVERRIDES: dict[str, Override] = {}


def override(*ops: str) -> Callable[[Override], Override]:
    def register(fn: Override) -> Override:
        for op in ops:
            OVERRIDES[op] = fn
        return fn

    return register


def _preset(ctx: Context, **values: Any) -> None:
    ctx.preset.update(values)


@override("aten::mm.default", "aten::addmm.default", "aten::matmul.default", "aten::bmm.default",
          "aten::baddbmm.default", "aten::linear.default", "aten::addmv.default", "aten::addbmm.default",
          "forge::fused_linear.default", "forge::gated_mlp.default", "forge::matmul_transposed.default")
def _matrix_products(draw, ctx: Context) -> None:
    m = draw(st.sampled_from([0, 1, 2, 3, 4, 1, 2, 3]))
    k, n, b = (draw(st.integers(1, 4)) for _ in range(3))
    dtype = float_dtype(draw) if draw(st.integers(0, 5)) else any_dtype(draw)
    T = lambda *s: tensors(tuple(s), dtype)  # noqa: E731
    op = ctx.op
    if op in ("aten::mm.default",):
        _preset(ctx, self=T(m, k), mat2=T(k, n))
    elif op == "aten::addmm.default":
        _preset(ctx, self=T(*draw(st.sampled_from([(m, n), (n,), (1, n), ()]))), mat1=T(m, k), mat2=T(k, n))
    elif op == "aten::bmm.default":
        _preset(ctx, self=T(b, m, k), mat2=T(b, k, n))
    elif op in ("aten::baddbmm.default", "aten::addbmm.default"):
        out = (b, m, n) if op == "aten::baddbmm.default" else (m, n)
        _preset(ctx, self=T(*out[len(out) - draw(st.integers(0, len(out))) :]), batch1=T(b, m, k), batch2=T(b, k, n))
    elif op == "aten::addmv.default":
        _preset(ctx, self=T(*draw(st.sampled_from([(m,), ()]))), mat=T(m, k), vec=T(k))
    elif op == "aten::matmul.default":
        a = draw(st.sampled_from([(k,), (m, k), (b, m, k), (2, b, m, k)]))
        c = draw(st.sampled_from([(k,), (k, n), (b, k, n), (1, k, n)]))
        _preset(ctx, self=T(*a), other=T(*c))
    elif op in ("aten::linear.default", "forge::fused_linear.default"):
        lead = draw(st.sampled_from([(m,), (b, m), ()]))
        bias = draw(st.sampled_from([None, T(n)]))
        _preset(ctx, input=T(*lead, k), weight=T(n, k), bias=bias)
    elif op == "forge::gated_mlp.default":
        _preset(ctx, input=T(b, m, k), gate_weight=T(n, k), up_weight=T(n, k))
    elif op == "forge::matmul_transposed.default":
        ti, to = draw(st.booleans()), draw(st.booleans())
        _preset(ctx, input=T(b, *((k, m) if ti else (m, k))), other=T(b, *((n, k) if to else (k, n))),
                transpose_input=ti, transpose_other=to)
    ctx.base, ctx.dtype = (m, k), dtype


@override("aten::conv1d.default", "aten::conv2d.default", "aten::conv1d.padding", "aten::conv2d.padding",
          "aten::convolution.default", "aten::conv_transpose1d.default", "aten::conv_transpose2d.input",
          "aten::_convolution_mode.default", "forge::fused_conv.default")
def _convolutions(draw, ctx: Context) -> None:
    op = ctx.op
    spatial = 1 if "1d" in op else 2 if "2d" in op else draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    size = tuple(draw(st.integers(1, 5)) for _ in range(spatial))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    dtype = float_dtype(draw)
    transposed = "transpose" in op or (op == "aten::convolution.default" and draw(st.booleans()))
    weight = (cin, cout // groups, *kernel) if transposed else (cout, cin // groups, *kernel)
    batch = draw(st.sampled_from([(1,), (2,), ()])) if op != "aten::convolution.default" else (1,)
    _preset(ctx, input=tensors((*batch, cin, *size), dtype), weight=tensors(weight, dtype),
            bias=draw(st.sampled_from([None, tensors((cout,), dtype)])), groups=groups)
    if op == "aten::convolution.default":
        _preset(ctx, transposed=transposed, output_padding=[0] * spatial)
    if op == "forge::fused_conv.default":
        _preset(ctx, stride=[1] * spatial, padding=[0] * spatial, dilation=[1] * spatial)
    ctx.base, ctx.dtype = (*batch, cin, *size), dtype


@override("aten::layer_norm.default", "aten::native_layer_norm.default", "aten::rms_norm.default",
          "forge::add_layer_norm.default")
def _layer_norms(draw, ctx: Context) -> None:
    base = draw(shapes())
    dtype = float_dtype(draw)
    normalized = list(base[len(base) - draw(st.integers(1 if base else 0, len(base))) :])
    affine = [None, tensors(tuple(normalized), dtype)]
    _preset(ctx, input=tensors(base, dtype), normalized_shape=normalized, weight=draw(st.sampled_from(affine)),
            bias=draw(st.sampled_from(affine)), residual=tensors(base, dtype))
    ctx.base, ctx.dtype = base, dtype


@override("aten::batch_norm.default", "aten::native_batch_norm.default",
          "aten::_native_batch_norm_legit_no_training.default", "aten::_native_batch_norm_legit.no_stats",
          "aten::_native_batch_norm_legit_functional.default", "aten::group_norm.default",
          "aten::native_group_norm.default")
def _batch_norms(draw, ctx: Context) -> None:
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    spatial = tuple(draw(st.lists(st.integers(1, 4), max_size=2)))
    dtype = float_dtype(draw)
    stats = st.sampled_from([None, tensors((c,), torch.float32, "plain")])
    var = tensors((c,), torch.float32, "plain").map(torch.abs)
    _preset(ctx, input=tensors((n, c, *spatial), dtype), weight=draw(stats), bias=draw(stats),
            running_mean=tensors((c,), torch.float32, "plain"), running_var=var, num_groups=1, group=1,
            N=n, C=c, HxW=math.prod(spatial))
    if ctx.op == "aten::_native_batch_norm_legit.no_stats":
        _preset(ctx, training=True)  # training=False without statistics crashes torch's kernel (a segfault)
    ctx.base, ctx.dtype = (n, c, *spatial), dtype


@override("aten::scaled_dot_product_attention.default")
def _attention(draw, ctx: Context) -> None:
    b, h, lq, lk, d = (draw(st.integers(1, 3)) for _ in range(5))
    dtype = float_dtype(draw)
    mask = st.sampled_from([None, tensors((lq, lk), torch.bool), tensors((lq, lk), dtype)])
    _preset(ctx, query=tensors((b, h, lq, d), dtype), key=tensors((b, h, lk, d), dtype),
            value=tensors((b, h, lk, d), dtype), attn_mask=draw(mask), dropout_p=0.0)
    ctx.base, ctx.dtype = (b, h, lq, d), dtype


@override("aten::embedding.default", "aten::embedding_dense_backward.default")
def _embeddings(draw, ctx: Context) -> None:
    rows, width = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    dtype = float_dtype(draw)
    idx = draw(shapes(2))
    _preset(ctx, weight=tensors((rows, width), dtype),
            indices=tensors(idx, torch.int64, "plain").map(lambda t: t.remainder(rows)),
            offsets=st.just(torch.tensor([0], dtype=torch.int64)), mode=draw(st.integers(0, 2)),
            padding_idx=-1, per_sample_weights=None, num_weights=rows)
    ctx.base, ctx.dtype = (rows, width), dtype


@override("aten::_embedding_bag.default", "aten::_embedding_bag_forward_only.default")
def _embedding_bags(draw, ctx: Context) -> None:
    """1-d indices cut into bags by offsets that start at 0 and rise (the kernel reads past its
    buffers, and the process dies, on anything else); the last offset closes the last bag when
    include_last_offset says so. Per-sample weights only where torch takes them: mode 0 (sum)."""
    rows, width, count = draw(st.integers(1, 6)), draw(st.integers(1, 4)), draw(st.integers(0, 6))
    dtype = float_dtype(draw)
    cuts = sorted(draw(st.lists(st.integers(0, count), min_size=0, max_size=3)))
    include_last = draw(st.booleans())
    offsets = [0, *cuts, count] if include_last else [0, *cuts]
    mode = draw(st.integers(0, 2))
    weighted = mode == 0 and draw(st.booleans())
    _preset(ctx, weight=tensors((rows, width), dtype),
            indices=tensors((count,), torch.int64, "plain").map(lambda t: t.remainder(rows)),
            offsets=st.just(torch.tensor(offsets, dtype=torch.int64)), mode=mode,
            scale_grad_by_freq=False, sparse=False, include_last_offset=include_last,
            per_sample_weights=tensors((count,), dtype) if weighted else None,
            padding_idx=draw(st.integers(-1, rows - 1)))
    ctx.base, ctx.dtype = (rows, width), dtype


@override("aten::_weight_norm_interface.default")
def _weight_norm_interface(draw, ctx: Context) -> None:
    """The fused CPU kernel takes the first or the last dim only (an assertion otherwise) and
    reads a norm of v's size at that dim from g (past its end, dying, if g is smaller)."""
    shape = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3))))
    dim = draw(st.sampled_from([0, len(shape) - 1]))
    keep = tuple(n if d == dim else 1 for d, n in enumerate(shape))
    dtype = float_dtype(draw)
    _preset(ctx, v=tensors(shape, dtype), g=tensors(draw(st.sampled_from([keep, (shape[dim],)])), dtype), dim=dim)
    ctx.base, ctx.dtype = shape, dtype


@override("aten::lcm.default")
def _lcm(draw, ctx: Context) -> None:
    """Integers without their type's minimum: lcm divides by a gcd that overflows to -1 there,
    and the process dies of SIGFPE (torch's kernel, not the op's meaning)."""
    dtype = draw(st.sampled_from([torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]))
    floor = torch.iinfo(dtype).min + (0 if dtype == torch.uint8 else 1)
    shape = draw(shapes())
    other = draw(st.sampled_from([shape, (), shape[len(shape) // 2 :]]))
    _preset(ctx, self=tensors(shape, dtype).map(lambda t: t.clamp_min(floor)),
            other=tensors(other, dtype).map(lambda t: t.clamp_min(floor)))
    ctx.base, ctx.dtype = shape, dtype


def _square(draw, ctx: Context) -> None:
    n = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    dtype = torch.float32
    ctx.base, ctx.dtype = (*batch, n, n), dtype
    tensor = tensors(ctx.base, dtype, "plain").map(lambda t: t + 4 * torch.eye(n))
    _preset(ctx, self=tensor, A=tensor, input=tensor, LU=tensor, LD=tensor,
            B=tensors((*batch, n, draw(st.integers(1, 3))), dtype, "plain"),
            input2=tensors((*batch, n, draw(st.integers(1, 3))), dtype, "plain"))


for _op in [o for o in SIGNATURES if "linalg" in o or "cholesky" in o or o.startswith(("aten::lu_", "aten::_linalg",
            "aten::triangular_solve", "aten::geqrf", "aten::ormqr"))]:
    OVERRIDES.setdefault(_op, _square)



def _spatial_rank(op: str, draw) -> int:
    return 1 if "1d" in op else 3 if "3d" in op else 2 if "2d" in op else draw(st.integers(1, 2))


def _image(draw, ctx: Context, spatial: int, batched: bool | None = None, max_size: int = 6) -> tuple[int, ...]:
    """An (N, C, *spatial) or (C, *spatial) input shape; sets the context's base."""
    batch = (draw(st.integers(1, 2)),) if (batched if batched is not None else draw(st.booleans())) else ()
    size = tuple(draw(st.integers(1, max_size if spatial < 3 else 3)) for _ in range(spatial))
    shape = (*batch, draw(st.integers(1, 3)), *size)
    ctx.base = shape
    return shape


@override(*(o for o in SIGNATURES if "pool" in o and "backward" not in o and "adaptive" not in o
            and "fractional" not in o))
def _pools(draw, ctx: Context) -> None:
    """Max and average pools: kernels that fit, padding at most half a kernel."""
    n = _spatial_rank(ctx.op, draw)
    shape = _image(draw, ctx, n)
    kernel = [draw(st.integers(1, min(3, s))) for s in shape[-n:]]
    stride = [draw(st.integers(1, 3)) for _ in range(n)]
    padding = [draw(st.integers(0, k // 2)) for k in kernel]
    dilation = [1 if "avg" in ctx.op else draw(st.sampled_from([1, 1, 2])) for _ in range(n)]
    dtype = float_dtype(draw) if draw(st.integers(0, 4)) else any_dtype(draw)
    ctx.dtype = dtype
    _preset(ctx, self=tensors(shape, dtype), kernel_size=kernel, stride=draw(st.sampled_from([stride, []])),
            padding=padding, dilation=dilation, divisor_override=draw(st.sampled_from([None, None, 1, 3])))


@override(*(o for o in SIGNATURES if "adaptive" in o and "backward" not in o))
def _adaptive_pools(draw, ctx: Context) -> None:
    n = _spatial_rank(ctx.op, draw)
    shape = _image(draw, ctx, n)
    ctx.dtype = float_dtype(draw)
    _preset(ctx, self=tensors(shape, ctx.dtype), output_size=[draw(st.integers(1, 4)) for _ in range(n)])


@override("aten::fractional_max_pool2d.default", "aten::fractional_max_pool3d.default")
def _fractional_pools(draw, ctx: Context) -> None:
    n = _spatial_rank(ctx.op, draw)
    shape = _image(draw, ctx, n, batched=True, max_size=5)
    kernel = [draw(st.integers(1, min(2, s))) for s in shape[-n:]]
    shape = (*shape[:2], *(max(d, 2) for d in shape[2:]))
    ctx.base = shape
    kernel = [1 for _ in kernel]
    out = [draw(st.integers(1, s - k)) for s, k in zip(shape[-n:], kernel, strict=True)]
    ctx.dtype = float_dtype(draw)
    _preset(ctx, self=tensors(shape, ctx.dtype), kernel_size=kernel, output_size=out,
            random_samples=tensors((shape[0], shape[1], n), ctx.dtype, "plain").map(lambda t: t.abs() % 1))


@override(*(o for o in SIGNATURES if "upsample" in o))
def _upsamples(draw, ctx: Context) -> None:
    """Exactly one of output_size and scale_factors."""
    n = _spatial_rank(ctx.op, draw)
    shape = _image(draw, ctx, n, batched=True, max_size=4)
    ctx.dtype = float_dtype(draw)
    size = [draw(st.integers(1, 6)) for _ in range(n)]
    scales = [draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0])) for _ in range(n)]
    by_size = draw(st.booleans()) or "_aa" in ctx.op
    _preset(ctx, input=tensors(shape, ctx.dtype), self=tensors(shape, ctx.dtype),
            output_size=size if by_size else None, scale_factors=None if by_size else scales)


@override(*(o for o in SIGNATURES if "_pad" in o), "aten::pad.default", "aten::constant_pad_nd.default")
def _pads(draw, ctx: Context) -> None:
    """Pads smaller than the padded dimensions (reflection needs it), negative now and then."""
    n = _spatial_rank(ctx.op, draw) if "_pad" in ctx.op else draw(st.integers(1, 3))
    shape = _image(draw, ctx, n)
    ctx.dtype = any_dtype(draw) if "constant" in ctx.op or ctx.op == "aten::pad.default" else float_dtype(draw)
    pad = []
    for size in reversed(shape[-n:]):
        pad += [draw(st.integers(-1 if "constant" in ctx.op else 0, max(size - 1, 0))) for _ in range(2)]
    _preset(ctx, self=tensors(shape, ctx.dtype), pad=pad, padding=pad)


def _index_for(draw, shape: tuple[int, ...], size: int, dtype: torch.dtype = torch.int64) -> Any:
    return draw(tensors(shape, dtype, "plain")).remainder(max(size, 1))


@override("aten::scatter.src", "aten::scatter.value", "aten::scatter_add.default", "aten::scatter_reduce.two",
          "aten::scatter.reduce", "aten::scatter.value_reduce", "aten::gather.default", "aten::index_reduce.default")
def _scatters(draw, ctx: Context) -> None:
    """An index no larger than self in any dimension (and than src), within the scattered dimension."""
    shape = draw(shapes(3))
    rank = max(len(shape), 1)
    dim = draw(st.integers(-rank, rank - 1))
    ctx.base, ctx.dim = shape, dim
    ctx.dtype = any_dtype(draw) if draw(st.integers(0, 3)) == 0 else float_dtype(draw)
    size = shape[dim] if shape else 1
    if ctx.op == "aten::index_reduce.default":
        idx = (draw(st.integers(0, 4)),)
        src = tuple(s if d != dim % rank else idx[0] for d, s in enumerate(shape)) if shape else idx
        _preset(ctx, self=tensors(shape, ctx.dtype), dim=dim, index=st.just(_index_for(draw, idx, size)),
                source=tensors(src, ctx.dtype), reduce=draw(st.sampled_from(["prod", "mean", "amax", "amin"])))
        return
    index_shape = tuple(draw(st.integers(0 if s == 0 else 1, s)) for s in shape)
    _preset(ctx, self=tensors(shape, ctx.dtype), dim=dim, index=st.just(_index_for(draw, index_shape, size)),
            src=tensors(index_shape, ctx.dtype))


@override("aten::index_put.default", "aten::_unsafe_index_put.default")
def _index_puts(draw, ctx: Context) -> None:
    shape = draw(shapes(3).filter(lambda s: len(s) >= 1))
    ctx.base = shape
    ctx.dtype = float_dtype(draw) if draw(st.integers(0, 3)) else any_dtype(draw)
    k = draw(st.integers(1, len(shape)))
    n = draw(st.integers(1, 4))
    indices = [_index_for(draw, (n,), s) for s in shape[:k]]
    values_shape = draw(st.sampled_from([(n, *shape[k:]), (), (1,)]))
    _preset(ctx, self=tensors(shape, ctx.dtype), indices=indices, values=tensors(values_shape, ctx.dtype))


@override("aten::put.default")
def _put(draw, ctx: Context) -> None:
    shape = draw(shapes(3))
    ctx.base, ctx.dtype = shape, float_dtype(draw)
    n = draw(st.integers(0, 4))
    numel = math.prod(shape)
    _preset(ctx, self=tensors(shape, ctx.dtype), index=st.just(_index_for(draw, (n,), numel) if numel else
                                                              torch.zeros((0,), dtype=torch.int64)),
            source=tensors((n,) if numel else (0,), ctx.dtype))


@override("aten::select_scatter.default", "aten::slice_scatter.default", "aten::diagonal_scatter.default",
          "aten::as_strided_scatter.default")
def _view_scatters(draw, ctx: Context) -> None:
    """src is the view of self the op writes: computed from the other arguments by torch itself."""
    shape = draw(shapes(3).filter(lambda s: len(s) >= (2 if "diagonal" in ctx.op else 1)))
    rank = len(shape)
    ctx.base, ctx.dtype = shape, any_dtype(draw)
    base = torch.zeros(shape)
    dim = draw(st.integers(-rank, rank - 1))
    if ctx.op == "aten::select_scatter.default":
        index = draw(st.integers(-shape[dim], max(shape[dim] - 1, 0))) if shape[dim] else 0
        view, extra = base.select(dim, index) if shape[dim] else base, {"dim": dim, "index": index}
    elif ctx.op == "aten::slice_scatter.default":
        start, end, step = draw(st.integers(-2, 3)), draw(st.integers(-1, 6)), draw(st.integers(1, 3))
        view, extra = base[(slice(None),) * (dim % rank) + (slice(start, end, step),)], {
            "dim": dim, "start": start, "end": end, "step": step}
    elif ctx.op == "aten::diagonal_scatter.default":
        d1, d2 = draw(st.permutations(range(rank)))[:2]
        offset = draw(st.integers(-2, 2))
        view, extra = base.diagonal(offset, d1, d2), {"offset": offset, "dim1": d1, "dim2": d2}
    else:
        size = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2)))]
        stride = [draw(st.integers(0, 2)) for _ in size]
        view, extra = base, {"size": size, "stride": stride, "storage_offset": draw(st.integers(0, 2))}
        try:
            view = torch.as_strided(base, size, stride, extra["storage_offset"])
        except RuntimeError:
            pass
    _preset(ctx, self=tensors(shape, ctx.dtype), src=tensors(tuple(view.shape), ctx.dtype), **extra)


@override("aten::masked_scatter.default")
def _masked_scatter(draw, ctx: Context) -> None:
    shape = draw(shapes(3))
    ctx.base, ctx.dtype = shape, any_dtype(draw)
    _preset(ctx, self=tensors(shape, ctx.dtype), mask=tensors(shape, torch.bool),
            source=tensors((max(math.prod(shape), 1),), ctx.dtype))


@override("aten::split_with_sizes.default", "aten::dsplit.array", "aten::hsplit.int", "aten::vsplit.int")
def _splits(draw, ctx: Context) -> None:
    shape = draw(shapes(3).filter(lambda s: len(s) >= (3 if "dsplit" in ctx.op else 2 if "vsplit" in ctx.op else 1)))
    rank = len(shape)
    dim = draw(st.integers(-rank, rank - 1))
    ctx.base, ctx.dim, ctx.dtype = shape, dim, any_dtype(draw)
    rest, sizes = shape[dim], []
    while rest > 0:
        sizes.append(draw(st.integers(1, rest)))
        rest -= sizes[-1]
    axis = {"aten::hsplit.int": 1 if rank > 1 else 0, "aten::vsplit.int": 0, "aten::dsplit.array": 2}.get(ctx.op)
    sections = [d for d in range(1, 4) if axis is not None and shape[axis] % d == 0]
    _preset(ctx, self=tensors(shape, ctx.dtype), split_sizes=sizes, dim=dim,
            sections=draw(st.sampled_from(sections or [1])),
            indices=sorted(draw(st.lists(st.integers(0, 4), max_size=3))))


@override("aten::grid_sampler_2d.default", "aten::grid_sampler_3d.default")
def _grid_samplers(draw, ctx: Context) -> None:
    n = 3 if "3d" in ctx.op else 2
    shape = _image(draw, ctx, n, batched=True, max_size=4)
    out = [draw(st.integers(1, 3)) for _ in range(n)]
    ctx.dtype = float_dtype(draw)
    _preset(ctx, input=tensors(shape, ctx.dtype),
            grid=tensors((shape[0], *out, n), ctx.dtype, "plain").map(lambda t: t / 6),
            interpolation_mode=draw(st.integers(0, 1 if n == 3 else 2)), padding_mode=draw(st.integers(0, 2)))


@override("aten::_adaptive_avg_pool2d_backward.default", "aten::avg_pool2d_backward.default",
          "aten::max_pool2d_with_indices_backward.default")
def _pool_backwards(draw, ctx: Context) -> None:
    """grad_output of the forward pool's result shape (and its indices), from torch's own forward."""
    shape = _image(draw, ctx, 2, batched=True, max_size=5)
    ctx.dtype = torch.float32
    kernel = [draw(st.integers(1, min(3, s))) for s in shape[-2:]]
    stride, padding = [draw(st.integers(1, 2)) for _ in range(2)], [draw(st.integers(0, k // 2)) for k in kernel]
    x = torch.zeros(shape)
    if "adaptive" in ctx.op:
        out = torch.ops.aten._adaptive_avg_pool2d(x, [draw(st.integers(1, 3)) for _ in range(2)])
        indices = None
    elif "avg" in ctx.op:
        out, indices = torch.ops.aten.avg_pool2d(x, kernel, stride, padding), None
    else:
        out, indices = torch.ops.aten.max_pool2d_with_indices(draw(tensors(shape, torch.float32, "plain")), kernel,
                                                               stride, padding)
    _preset(ctx, grad_output=tensors(tuple(out.shape), torch.float32), self=tensors(shape, torch.float32),
            kernel_size=kernel, stride=stride, padding=padding, dilation=[1, 1], ceil_mode=False,
            count_include_pad=True, divisor_override=None, indices=st.just(indices))


@override("aten::embedding_dense_backward.default")
def _embedding_backward(draw, ctx: Context) -> None:
    rows, width = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    idx = draw(shapes(2))
    ctx.base, ctx.dtype = idx, torch.float32
    _preset(ctx, grad_output=tensors((*idx, width), torch.float32),
            indices=st.just(_index_for(draw, idx, rows)), num_weights=rows,
            padding_idx=draw(st.integers(-1, rows - 1)))


@override("aten::col2im.default")
def _col2im(draw, ctx: Context) -> None:
    kernel, out = [draw(st.integers(1, 2)) for _ in range(2)], [draw(st.integers(2, 4)) for _ in range(2)]
    blocks = math.prod(o - k + 1 for o, k in zip(out, kernel, strict=True))
    c = draw(st.integers(1, 2))
    ctx.base, ctx.dtype = (c * math.prod(kernel), blocks), float_dtype(draw)
    _preset(ctx, self=tensors(ctx.base, ctx.dtype), output_size=out, kernel_size=kernel, dilation=[1, 1],
            padding=[0, 0], stride=[1, 1])


@override("aten::_cdist_forward.default", "aten::_pdist_forward.default", "aten::dist.default")
def _distances(draw, ctx: Context) -> None:
    n, m, d = (draw(st.integers(1, 4)) for _ in range(3))
    ctx.dtype = torch.float32
    ctx.base = (n, d)
    _preset(ctx, x1=tensors((n, d), ctx.dtype), x2=tensors((m, d), ctx.dtype), self=tensors((n, d), ctx.dtype),
            other=tensors((n, d), ctx.dtype), p=draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, math.inf])),
            compute_mode=None)


@override("aten::bucketize.Tensor", "aten::searchsorted.Tensor")
def _sorted_lookups(draw, ctx: Context) -> None:
    shape = draw(shapes(2))
    ctx.base, ctx.dtype = shape, float_dtype(draw)
    boundaries = tensors((draw(st.integers(1, 6)),), ctx.dtype).map(lambda t: t.sort().values)
    _preset(ctx, self=tensors(shape, ctx.dtype), boundaries=boundaries, sorted_sequence=boundaries, sorter=None,
            side=None)


@override("aten::multinomial.default")
def _multinomial(draw, ctx: Context) -> None:
    rows = draw(st.sampled_from([(), (2,)]))
    k = draw(st.integers(1, 5))
    ctx.dtype = torch.float32
    _preset(ctx, self=tensors((*rows, k), torch.float32, "plain").map(lambda t: t.abs() + 0.1),
            num_samples=draw(st.integers(1, k)))


@override("aten::histc.default", "aten::histogram.bin_ct", "aten::_histogramdd_bin_edges.default",
          "aten::_histogramdd_from_bin_cts.default")
def _histograms(draw, ctx: Context) -> None:
    dims = 1 if "dd" not in ctx.op else draw(st.integers(1, 2))
    n = draw(st.integers(1, 8))
    ctx.dtype = torch.float32
    shape = (n,) if "dd" not in ctx.op else (n, dims)
    lo, hi = sorted(draw(st.lists(st.integers(-5, 5), min_size=2, max_size=2, unique=True)))
    _preset(ctx, self=tensors(shape, torch.float32, "plain"), bins=draw(st.integers(1, 5)) if "dd" not in ctx.op
            else [draw(st.integers(1, 4)) for _ in range(dims)], min=lo, max=hi,
            range=draw(st.sampled_from([None, [float(lo), float(hi)] * dims])), weight=None)


@override("aten::_trilinear.default")
def _trilinear(draw, ctx: Context) -> None:
    b, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ctx.dtype = torch.float32
    _preset(ctx, i1=tensors((b, n), torch.float32), i2=tensors((b, n), torch.float32),
            i3=tensors((b, n), torch.float32), expand1=[], expand2=[], expand3=[], sumdim=[1],
            unroll_dim=draw(st.integers(0, 1)))


@override("aten::segment_reduce.default")
def _segment_reduce(draw, ctx: Context) -> None:
    lengths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    ctx.dtype = torch.float32
    _preset(ctx, data=tensors((sum(lengths), draw(st.integers(1, 3))), torch.float32),
            lengths=st.just(torch.tensor(lengths)), indices=None, offsets=None, axis=0,
            reduce=draw(st.sampled_from(["max", "mean", "min", "sum", "prod"])), initial=draw(st.sampled_from(
                [None, 0.0, 1.0])))


@override("aten::scatter.reduce", "aten::scatter.value_reduce")
def _scatter_reduces(draw, ctx: Context) -> None:
    _scatters(draw, ctx)
    _preset(ctx, reduce=draw(st.sampled_from(["add", "multiply"])))


@override("aten::normal.Tensor_Tensor", "aten::rrelu_with_noise_functional.default")
def _random_draws(draw, ctx: Context) -> None:
    shape = draw(shapes(3))
    ctx.base, ctx.dtype = shape, float_dtype(draw)
    lower = draw(st.sampled_from([0.0, 0.125, 0.5]))
    _preset(ctx, mean=tensors(shape, ctx.dtype), std=tensors(shape, ctx.dtype, "plain").map(torch.abs),
            self=tensors(shape, ctx.dtype), noise=tensors(shape, ctx.dtype), lower=lower, upper=lower + 0.25)


@override("aten::linalg_householder_product.default", "aten::ormqr.default")
def _householder(draw, ctx: Context) -> None:
    m, n = sorted((draw(st.integers(1, 4)), draw(st.integers(1, 4))), reverse=True)
    a = draw(tensors((m, n), torch.float32, "plain"))
    qr, tau = torch.geqrf(a)
    ctx.base, ctx.dtype = (m, n), torch.float32
    _preset(ctx, input=st.just(qr), tau=st.just(tau), self=st.just(qr), input2=st.just(tau),
            input3=tensors((m, draw(st.integers(1, 3))), torch.float32))


@override("aten::linalg_lu_solve.default", "aten::linalg_ldl_solve.default", "aten::lu_unpack.default")
def _factored_solves(draw, ctx: Context) -> None:
    n = draw(st.integers(1, 4))
    # clamped and diagonally dominant: never singular, whatever values "plain" draws
    a = draw(tensors((n, n), torch.float32, "plain")).nan_to_num().clamp(-1, 1) + 8 * torch.eye(n)
    ldl = "ldl" in ctx.op
    factors, pivots = torch.linalg.ldl_factor(a + a.T) if ldl else torch.linalg.lu_factor(a)
    ctx.base, ctx.dtype = (n, n), torch.float32
    _preset(ctx, LU=st.just(factors), LD=st.just(factors), LU_data=st.just(factors), pivots=st.just(pivots),
            LU_pivots=st.just(pivots), B=tensors((n, draw(st.integers(1, 3))), torch.float32))


@override("aten::as_strided.default", "aten::as_strided_copy.default")
def _as_strided(draw, ctx: Context) -> None:
    shape = draw(shapes(3).filter(lambda s: math.prod(s) > 0))
    ctx.base, ctx.dtype = shape, any_dtype(draw)
    numel = math.prod(shape)
    rank = draw(st.integers(0, 3))
    size = [draw(st.integers(1, 3)) for _ in range(rank)]
    stride = [draw(st.integers(0, 2)) for _ in range(rank)]
    reach = sum((a - 1) * b for a, b in zip(size, stride, strict=True))
    _preset(ctx, self=tensors(shape, ctx.dtype), size=size, stride=stride,
            storage_offset=draw(st.integers(0, max(numel - 1 - reach, 0))) if reach < numel else 0)


@override("aten::arange.default", "aten::arange.start", "aten::arange.start_step")
def _aranges(draw, ctx: Context) -> None:
    number = st.one_of(st.integers(-6, 12), st.sampled_from([0.5, -2.5, 7.25, 1e-3]))
    start, end = draw(number), draw(number)
    step = draw(st.sampled_from([1, 2, 3, 0.5, 0.3, -1, -0.25]))
    if (end - start) * step < 0:
        step = -step
    _preset(ctx, start=start, end=end, step=step, dtype=draw(st.sampled_from([None, None, torch.float32,
                                                                              torch.int64, torch.float16])))


@override("aten::cartesian_prod.default")
def _cartesian(draw, ctx: Context) -> None:
    dtype = any_dtype(draw)
    ctx.dtype = dtype
    _preset(ctx, tensors=[draw(tensors((draw(st.integers(0, 4)),), dtype)) for _ in range(draw(st.integers(1, 3)))])


@override("aten::empty_permuted.default")
def _empty_permuted(draw, ctx: Context) -> None:
    size = list(draw(shapes(3)))
    _preset(ctx, size=size, physical_layout=list(draw(st.permutations(range(len(size))))))
