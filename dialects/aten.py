"""The `aten` dialect: one op per ATen overload that torch.export produces for our model families.

Each op class is generated from its overload's schema (see `aten_schema.py`): tensors are operands,
everything else is a property stored only when it differs from the schema default. Semantics, shape
verification and constant folding all come from the overload itself (`op.call(...)` runs it), so
adding an ATen op is one schema row in dialects/aten_table.py (scripts/gen_aten_ops.py writes it).

Custom syntax (optional tensors print `none`, lists of tensors print in brackets):

    %y = aten.addmm %bias, %x, %w {beta = 1, alpha = 1} : (tensor<768xf32>, ...) -> tensor<128x768xf32>
    %z = aten.layer_norm %x, %w, none {normalized_shape = [768], eps = 1.0e-05} : (...) -> tensor<...>
    %c = aten.cat [%a, %b] {dim = 1} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>

Forge's fused ops (`aten.fused_linear`, `aten.add_layer_norm`, ...) are torch custom ops in the `forge`
library namespace, so the same machinery gives them semantics and verification; their op classes are
generated from the table in `dialects/fused_kernels.py` (`FUSED_OPS`).
`aten.weight` names a WeightStore entry (no data in the IR); `aten.constant` holds a small dense value.
"""

# Why one module of ~1,100 lines: one dialect per file (docs/architecture.md). The op table is data in
# dialects/aten_table.py; this file is the generic machinery that turns each row into an op class.

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from dialects import aten_schema as schema
from dialects import aten_shapes
from dialects.aten_schema import ArgKind, ArgSpec, Signature, is_elementwise
from dialects.aten_table import SIGNATURES
from dialects.shapes import broadcast_shapes
from dialects.torch_types import dense_tensor, dtype_of, is_dtype_attr, meta_tensor, shape_of, tensor_type

if TYPE_CHECKING:
    import torch


class _Fixed(NamedTuple):
    """A non-tensor argument's value, read from the op's attributes once (`AtenOp.argument_binder`)."""

    value: Any


_TORCH_OBJECT_KINDS = frozenset({ArgKind.DTYPE, ArgKind.DEVICE, ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT})
"""Argument kinds `AtenOp.arg` gives as torch objects (`ir_arg` as element types and names)."""

PRESENT_MASK = "present"
"""Property of ops with a `Tensor?[]` argument: 1/0 per list entry, whether a tensor is there."""

_INFERRED_TYPES: dict[tuple, list[Attribute]] = {}

_RESERVED_FIELDS = set(dir(IRDLOperation)) | {"name", "traits", "irdl_options", "signature"}


_NO_META_KERNEL = "attempted to run this operator with Meta tensors"
_ZEROS_RUN_LIMIT = 1 << 22  # ops without a meta kernel run on zeros: bound what that may allocate

# Ops whose `dim` may name the position just past the last dim (a new one).
_DIM_PAST_LAST = {"aten::unsqueeze.default": 1}


class AtenOp(IRDLOperation):
    """Base of every schema-driven `aten` op; `signature` says which schema it mirrors."""

    SIGNATURE: ClassVar[Signature]
    NEEDS_SEGMENT_SIZES: ClassVar[bool] = False

    # --- reading arguments -------------------------------------------------------------------

    def arg(self, name: str) -> Any:
        """The Python value of non-tensor argument `name` (the schema default when not stored), as
        torch takes it: a dtype, device, layout or memory format argument gives a torch object (and
        imports torch); `ir_arg` reads those without torch."""
        spec = self.SIGNATURE.arg(name)
        attr = self.properties.get(spec.name)
        if attr is None:
            return spec.default if spec.has_default else None
        return schema.from_attribute(spec.kind, attr)

    def ir_arg(self, name: str) -> Any:
        """Non-tensor argument `name` as the IR states it, never importing torch (what a pass should
        read): a dtype is its element type (`f32`, `i64`; compare with `TensorType.element_type`), a
        device, layout or memory format its name (`"cpu"`, `"strided"`, `"contiguous_format"`);
        None when absent and the schema default is None. Every other argument is `arg(name)`."""
        spec = self.SIGNATURE.arg(name)
        attr = self.properties.get(spec.name)
        if spec.kind not in _TORCH_OBJECT_KINDS:
            return self.arg(name)
        if attr is None:
            return schema.default_ir_value(spec)
        return attr.data if isinstance(attr, StringAttr) else attr

    def tensor_arg(self, name: str) -> SSAValue | None:
        """The operand bound to tensor argument `name` (None when an optional tensor is absent)."""
        return getattr(self, self.SIGNATURE.arg(name).field)

    def call_arguments(
        self, values: Sequence[Any], *, device: torch.device | None = None
    ) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments to call the overload, given values for the operands.

        `device`, when given, replaces every Device argument (shape inference runs on "meta").
        """
        return self.argument_binder(device=device)(values)

    def argument_binder(
        self, *, device: torch.device | None = None
    ) -> Callable[[Sequence[Any]], tuple[list[Any], dict[str, Any]]]:
        """`call_arguments` as a function of the operand values alone, the op's attributes read once:
        for a kernel called every step (a KV cache's row write), where decoding them per call cost
        more than the write itself."""
        plan: list[tuple[str | None, Any]] = []  # (keyword or None, how to get the value)
        for spec in self.SIGNATURE.args:
            if spec.kind is ArgKind.GENERATOR:
                continue
            if spec.kind is ArgKind.TENSOR:
                how: Any = True
            elif spec.kind is ArgKind.OPT_TENSOR:
                how = getattr(self, spec.field) is not None
            elif spec.kind is ArgKind.TENSOR_LIST:
                how = [True] * len(getattr(self, spec.field))
            elif spec.kind is ArgKind.OPT_TENSOR_LIST:
                how = [bool(p) for p in self.present_mask()]
            else:
                how = _Fixed(device if spec.kind is ArgKind.DEVICE and device is not None else self.arg(spec.name))
            plan.append((spec.name if spec.kwarg_only else None, how))

        def bind(values: Sequence[Any]) -> tuple[list[Any], dict[str, Any]]:
            it = iter(values)
            args: list[Any] = []
            kwargs: dict[str, Any] = {}
            for keyword, how in plan:
                if isinstance(how, _Fixed):
                    value = how.value
                elif isinstance(how, list):
                    value = [next(it) if present else None for present in how]
                else:
                    value = next(it) if how else None
                if keyword is None:
                    args.append(value)
                else:
                    kwargs[keyword] = value
            return args, kwargs

        return bind

    def present_mask(self) -> list[int]:
        mask = self.properties.get(PRESENT_MASK)
        assert isinstance(mask, DenseArrayBase)
        return [int(v) for v in mask.get_values()]

    def call(self, values: Sequence[Any]) -> Any:
        """Run the op's semantics on concrete values (tensors for operands, in operand order).

        Forge IR has value semantics: tensors carry no strides, so passes may drop a
        `contiguous` before a `view`. Ops whose ATen kernel depends on strides run as their
        value-semantics equivalent (`view` as `reshape`), see VALUE_SEMANTICS.
        """
        args, kwargs = self.call_arguments(values)
        target = schema.resolve_overload(_VALUE_SEMANTICS.get(self.SIGNATURE.qualname, self.SIGNATURE.qualname))
        out = target(*args, **kwargs)
        if self.SIGNATURE.qualname in _AUX_RESULTS and all(isinstance(t, TensorType) for t in self.result_types):
            out = self.with_declared_aux_shapes(out)
        return out

    def with_declared_aux_shapes(self, out: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """The CPU kernel's results, with each AUX_RESULTS entry whose shape differs from the declared
        (meta) type replaced by zeros of the declared type, so memory planned from the IR fits."""
        import torch

        aux = _AUX_RESULTS.get(self.SIGNATURE.qualname, frozenset())
        fixed = []
        for i, (value, ty) in enumerate(zip(out, self.result_types, strict=True)):
            if i in aux and tuple(value.shape) != shape_of(ty):
                value = torch.zeros(shape_of(ty), dtype=dtype_of(ty))
            fixed.append(value)
        return tuple(fixed)

    # --- verification: shapes and dtypes inferred by running the overload on meta tensors ----

    def verify_(self) -> None:
        for spec in self.SIGNATURE.property_args:
            attr = self.properties.get(spec.name)
            if attr is None:
                if not spec.has_default:
                    raise VerifyException(f"{self.name}: missing required property '{spec.name}'")
            elif not schema.is_valid_attribute(spec.kind, attr):
                raise VerifyException(f"{self.name}: property '{spec.name}' has invalid value {attr}")
        self._verify_present_mask()
        for operand in self.operands:
            if not isinstance(operand.type, TensorType) or not operand.type.has_static_shape():
                raise VerifyException(f"{self.name}: operands must be statically shaped tensors, got {operand.type}")
            if not is_dtype_attr(operand.type.element_type):
                raise VerifyException(f"{self.name}: unsupported element type {operand.type.element_type}")
        self._verify_channel_params()
        inferred = self.infer_result_types()
        self._verify_dim_in_range()
        if not _same_result_types(self.SIGNATURE.qualname, inferred, self.result_types):
            got = ", ".join(map(str, self.result_types))
            want = ", ".join(map(str, inferred))
            raise VerifyException(f"{self.name}: result type {got} does not match inferred type {want}")

    def _verify_dim_in_range(self) -> None:
        """Some meta kernels never check `dim` (softmax accepts dim=99 on meta): check it here,
        with torch's wrapping rule (a rank-0 tensor takes dims -1 and 0)."""
        first = self.SIGNATURE.args[0] if self.SIGNATURE.args else None
        has_dim = any(a.name == "dim" and a.kind is ArgKind.INT for a in self.SIGNATURE.args)
        if first is None or first.kind is not ArgKind.TENSOR or not has_dim or not self.operands:
            return
        dim = self.arg("dim")
        rank = max(len(shape_of(self.operands[0].type)), 1) + _DIM_PAST_LAST.get(self.SIGNATURE.qualname, 0)
        if dim is not None and not -rank <= dim < rank:
            raise VerifyException(
                f"{self.name}: dim {dim} is out of range for a rank-{len(shape_of(self.operands[0].type))} "
                f"operand (expected {-rank} to {rank - 1})"
            )

    def _verify_channel_params(self) -> None:
        """A batch norm's weight, bias and running statistics hold one value per channel of the input
        (dim 1; torch checks the count, not the shape): the CPU kernel reads a longer one's first
        values, the meta kernel broadcasts it into the result's shape; neither is a meaning: refuse."""
        if self.SIGNATURE.qualname not in _CHANNEL_PARAM_OPS:
            return
        shape = shape_of(self.operands[0].type)
        channels = shape[1] if len(shape) > 1 else None
        for name in ("weight", "bias", "running_mean", "running_var"):
            spec = self.SIGNATURE.arg(name) if any(a.name == name for a in self.SIGNATURE.args) else None
            value = getattr(self, spec.field) if spec is not None else None
            if value is None or channels is None:
                continue
            if math.prod(shape_of(value.type)) != channels:
                raise VerifyException(
                    f"{self.name}: {name} has shape {list(shape_of(value.type))}, the input ({list(shape)}) has "
                    f"{channels} channels (expected {channels} values: one per channel)"
                )

    def _verify_present_mask(self) -> None:
        specs = [s for s in self.SIGNATURE.args if s.kind is ArgKind.OPT_TENSOR_LIST]
        if not specs:
            return
        mask = self.properties.get(PRESENT_MASK)
        if not isinstance(mask, DenseArrayBase):
            raise VerifyException(f"{self.name}: missing '{PRESENT_MASK}' mask for {specs[0].name}")
        if sum(self.present_mask()) != len(getattr(self, specs[0].field)):
            raise VerifyException(f"{self.name}: '{PRESENT_MASK}' mask does not match the operand count")

    def infer_result_types(self) -> list[Attribute]:
        """Result types from the op's native result-type function (dialects/aten_shapes.py, no torch),
        else from the overload's meta kernel (imports torch); VerifyException if it rejects the op.

        Memoized on (op, operand types, properties): transformer layers repeat the same signatures.
        """
        key = (self.name, tuple(self.operand_types), tuple(self.properties.items()))
        cached = _INFERRED_TYPES.get(key)
        if cached is None:
            cached = _INFERRED_TYPES[key] = self._infer()
        return cached

    def _infer(self) -> list[Attribute]:
        native = aten_shapes.infer(self)
        return native if native is not None else self.infer_with_torch()

    def infer_with_torch(self) -> list[Attribute]:
        """Result types from torch (the meta kernel, or the CPU kernel on 1-element probes for the
        elementwise ops, or on zeros for KERNEL_TYPED): the reference the native functions are
        tested against."""
        if is_elementwise(self.SIGNATURE):
            return self._infer_elementwise()
        if self.SIGNATURE.qualname in KERNEL_TYPED and self._operand_elements() <= _ZEROS_RUN_LIMIT:
            return self._infer_on_kernel()
        return self._infer_on_meta()

    def _operand_elements(self) -> int:
        return sum(math.prod(shape_of(v.type)) for v in self.operands)

    def _infer_on_kernel(self) -> list[Attribute]:
        """The CPU kernel's result types, run on zeros of the operand types (KERNEL_TYPED)."""
        try:
            out = self._run_on_zeros()
        except Exception as err:  # torch reports invalid operands as assorted exception types
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise VerifyException(f"{self.name}: {first_line}") from None
        return [tensor_type(tuple(t.shape), t.dtype) for t in _flatten_outputs(out)]

    def _infer_on_meta(self) -> list[Attribute]:
        import torch

        metas = [meta_tensor(v.type) for v in self.operands]
        args, kwargs = self.call_arguments(metas, device=torch.device("meta"))
        try:
            try:
                out = self.SIGNATURE.target(*args, **kwargs)
            except NotImplementedError as err:
                if _NO_META_KERNEL not in str(err):
                    raise
                out = self._run_on_zeros()
        except Exception as err:  # torch reports invalid operands as assorted exception types
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise VerifyException(f"{self.name}: {first_line}") from None
        return [tensor_type(tuple(t.shape), t.dtype) for t in _flatten_outputs(out)]

    def _run_on_zeros(self) -> Any:
        """Ops with no meta kernel (geqrf, histogram, ...): run the CPU kernel on zero-filled operands,
        as torch's fake tensors do; only ops whose result shape does not depend on values get here
        (the importer refuses the others)."""
        for spec in self.SIGNATURE.property_args:  # a real kernel allocates what these ask for
            value = self.arg(spec.name) if spec.kind in (ArgKind.INT, ArgKind.INT_LIST) else None
            values = value if isinstance(value, list) else [value] if value is not None else []
            if any(abs(v) > _ZEROS_RUN_LIMIT for v in values):
                raise ValueError(f"'{spec.name}' is too large to infer shapes without a meta kernel")
        if self._operand_elements() > _ZEROS_RUN_LIMIT:
            raise ValueError("operands too large to infer shapes without a meta kernel")
        import torch

        zeros = [torch.zeros(shape_of(v.type), dtype=dtype_of(v.type)) for v in self.operands]
        args, kwargs = self.call_arguments(zeros, device=torch.device("cpu"))
        return self.SIGNATURE.target(*args, **kwargs)

    # --- custom syntax -----------------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        operands = iter(self.operands)
        pieces: list[Callable[[], None]] = []
        for spec in self.SIGNATURE.tensor_args:
            pieces.append(_operand_printer(self, spec, operands, printer))
        for i, piece in enumerate(pieces):
            printer.print_string(", " if i else " ")
            piece()
        _print_properties(self, printer)
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)

    @classmethod
    def parse(cls, parser: Parser) -> AtenOp:
        groups: list[list] = []
        present: list[int] = []
        for i, spec in enumerate(cls.SIGNATURE.tensor_args):
            if i:
                hint = " (write `none` for an absent optional tensor)" if spec.kind is ArgKind.OPT_TENSOR else ""
                parser.parse_punctuation(",", f" before tensor argument '{spec.name}' of {cls.name}{hint}")
            groups.append(_parse_tensor_arg(parser, spec, present))
        properties = _parse_properties(cls.SIGNATURE, parser)
        if any(s.kind is ArgKind.OPT_TENSOR_LIST for s in cls.SIGNATURE.args):
            properties[PRESENT_MASK] = DenseArrayBase.from_list(schema.i64, present)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        pos = parser.pos
        func_type = parser.parse_function_type()
        unresolved = [u for group in groups for u in group]
        if len(func_type.inputs.data) != len(unresolved):
            parser.raise_error(
                f"{cls.name}: {len(unresolved)} operands but {len(func_type.inputs.data)} operand types",
                pos,
                _end_of_last_token(parser),
            )
        operands = iter(parser.resolve_operands(unresolved, func_type.inputs.data, pos))
        return cls.build_op(
            [[next(operands) for _ in group] for group in groups],
            properties,
            func_type.outputs.data,
            attributes=attributes.data if attributes else {},
        )

    @classmethod
    def build_op(
        cls,
        operand_groups: Sequence[Sequence[SSAValue]],
        properties: dict[str, Attribute],
        result_types: Sequence[Attribute],
        *,
        attributes: dict[str, Attribute] | None = None,
        location=None,
    ) -> AtenOp:
        """Create the op from one operand list per tensor argument (the fast path, no verify)."""
        if cls.NEEDS_SEGMENT_SIZES:
            sizes = [len(g) for g in operand_groups]
            properties = {**properties, "operandSegmentSizes": DenseArrayBase.from_list(i32, sizes)}
        return cls.create(
            operands=[v for g in operand_groups for v in g],
            result_types=result_types,
            properties=properties,
            attributes=attributes or {},
            location=location,
        )


    def _infer_elementwise(self) -> list[Attribute]:
        """Broadcast shape, and the dtype the real kernel gives on 1-element tensors of the same
        ranks and dtypes (so type promotion is exactly torch's). Cheaper than meta tensors, whose
        Python elementwise kernels import torch._dynamo on first use (seconds per process)."""
        shapes = [shape_of(v.type) for v in self.operands]
        try:
            shape = broadcast_shapes(*shapes)
            try:
                out = self._probe(shapes, 1)
            except RuntimeError as err:  # an integer divided by a zero number: empty probes divide nothing
                if "ZeroDivisionError" not in str(err):
                    raise
                out = self._probe(shapes, 0)
        except Exception as err:  # torch reports invalid operands as assorted exception types
            first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise VerifyException(f"{self.name}: {first_line}") from None
        return [tensor_type(shape, out.dtype)]

    def _probe(self, shapes: Sequence[tuple[int, ...]], size: int) -> Any:
        """The kernel's result on probe tensors of `shapes`' ranks whose dimensions are all `size` (0-d
        ones stay 0-d: a dimension or its absence is what type promotion reads)."""
        import torch

        operands = zip(shapes, self.operands, strict=True)
        probes = [torch.ones((size,) * len(s), dtype=dtype_of(v.type)) for s, v in operands]
        args, kwargs = self.call_arguments(probes, device=torch.device("cpu"))
        return self.SIGNATURE.target(*args, **kwargs)


def _same_result_types(qualname: str, inferred: Sequence[Attribute], declared: Sequence[Attribute]) -> bool:
    """Whether the declared result types are the inferred ones (AUX_RESULTS: dtype and rank only)."""
    if len(inferred) != len(declared):
        return False
    aux = _AUX_RESULTS.get(qualname, frozenset())
    for i, (want, got) in enumerate(zip(inferred, declared, strict=True)):
        if i in aux and isinstance(want, TensorType) and isinstance(got, TensorType):
            if want.element_type != got.element_type or len(want.get_shape()) != len(got.get_shape()):
                return False
        elif want != got:
            return False
    return True


def _operand_printer(op: AtenOp, spec: ArgSpec, operands, printer: Printer) -> Callable[[], None]:
    if spec.kind is ArgKind.TENSOR:
        value = next(operands)
        return lambda: printer.print_operand(value)
    if spec.kind is ArgKind.OPT_TENSOR:
        value = next(operands) if getattr(op, spec.field) is not None else None
        return lambda: printer.print_operand(value) if value is not None else printer.print_string("none")
    if spec.kind is ArgKind.TENSOR_LIST:
        values = [next(operands) for _ in getattr(op, spec.field)]
    else:
        values = [next(operands) if p else None for p in op.present_mask()]

    def print_list() -> None:
        printer.print_string("[")
        for i, v in enumerate(values):
            printer.print_string(", " if i else "")
            printer.print_operand(v) if v is not None else printer.print_string("none")
        printer.print_string("]")

    return print_list


def _end_of_last_token(parser: Parser) -> int:
    """Where the last consumed token ends (`parser.pos` is the start of the next one, which may be
    lines later): error spans then underline only what was parsed."""
    text = parser.lexer.input.content
    end = parser.pos
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def _parse_tensor_arg(parser: Parser, spec: ArgSpec, present: list[int]) -> list:
    if spec.kind is ArgKind.TENSOR:
        return [parser.parse_unresolved_operand()]
    if spec.kind is ArgKind.OPT_TENSOR:
        return [] if parser.parse_optional_keyword("none") else [parser.parse_unresolved_operand()]
    items = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: _parse_list_item(parser, spec, present)
    )
    return [i for i in items if i is not None]


def _parse_list_item(parser: Parser, spec: ArgSpec, present: list[int]):
    if spec.kind is ArgKind.OPT_TENSOR_LIST and parser.parse_optional_keyword("none"):
        present.append(0)
        return None
    if spec.kind is ArgKind.OPT_TENSOR_LIST:
        present.append(1)
    return parser.parse_unresolved_operand()


# --- property syntax: {dim = -1, keepdim = true, size = [1, 2], dtype = f32, eps = 1.0e-05} ----


def format_float(value: float) -> str:
    """A float as the custom syntax writes it: always with a `.` or exponent; inf/-inf/nan as words."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _print_value(printer: Printer, kind: ArgKind, attr: Attribute) -> None:
    if kind in (ArgKind.INT_LIST, ArgKind.FLOAT_LIST):
        assert isinstance(attr, DenseArrayBase)
        fmt = str if kind is ArgKind.INT_LIST else format_float
        printer.print_string("[" + ", ".join(fmt(v) for v in attr.get_values()) + "]")
    elif isinstance(attr, IntegerAttr) and attr.type == schema.i1:
        printer.print_string("true" if attr.value.data else "false")
    elif isinstance(attr, IntegerAttr):
        printer.print_string(str(attr.value.data))
    elif isinstance(attr, FloatAttr):
        printer.print_string(format_float(attr.value.data))
    elif isinstance(attr, StringAttr):
        printer.print_string_literal(attr.data)
    else:
        printer.print_attribute(attr)


def _print_properties(op: AtenOp, printer: Printer) -> None:
    items = [(s, op.properties[s.name]) for s in op.SIGNATURE.property_args if s.name in op.properties]
    if not items:
        return
    printer.print_string(" {")
    for i, (spec, attr) in enumerate(items):
        printer.print_string(f"{', ' if i else ''}{spec.name} = ")
        _print_value(printer, spec.kind, attr)
    printer.print_string("}")


def _parse_float_token(parser: Parser) -> float | int | None:
    negative = parser.parse_optional_punctuation("-") is not None
    for word, value in (("inf", math.inf), ("nan", math.nan)):
        if parser.parse_optional_keyword(word):
            return -value if negative else value
    number = parser.parse_optional_number()
    if number is None:
        if negative:
            parser.raise_error("expected a number after '-'")
        return None
    return -number if negative else number


def _parse_value(parser: Parser, spec: ArgSpec) -> Attribute:
    kind = spec.kind
    if kind in (ArgKind.INT_LIST, ArgKind.FLOAT_LIST):
        values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_float_token(parser))
        if kind is ArgKind.INT_LIST and not all(isinstance(v, int) for v in values):
            parser.raise_error(f"property '{spec.name}' expects a list of integers")
        return schema.to_attribute(kind, values)
    if kind is ArgKind.DTYPE:
        return parser.parse_type()
    if kind in (ArgKind.STR, ArgKind.DEVICE, ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
        return StringAttr(parser.parse_str_literal())
    if kind in (ArgKind.BOOL, ArgKind.SCALAR) and (flag := parser.parse_optional_boolean()) is not None:
        return schema.to_attribute(kind, flag)
    number = _parse_float_token(parser)
    if number is None or (kind is ArgKind.INT and not isinstance(number, int)):
        parser.raise_error(f"property '{spec.name}' expects {_KIND_WORDS[kind]}")
    if kind is ArgKind.BOOL:
        parser.raise_error(f"property '{spec.name}' expects true or false")
    return schema.to_attribute(kind, number)


_KIND_WORDS = {
    ArgKind.INT: "an integer",
    ArgKind.FLOAT: "a number",
    ArgKind.SCALAR: "a number or boolean",
    ArgKind.BOOL: "true or false",
}


def _parse_properties(sig: Signature, parser: Parser) -> dict[str, Attribute]:
    properties: dict[str, Attribute] = {}
    if parser.parse_optional_punctuation("{") is None:
        return properties
    by_name = {s.name: s for s in sig.property_args}
    while True:
        pos = parser.pos
        key = parser.parse_identifier()
        if key not in by_name:
            known = ", ".join(by_name) or "none"
            parser.raise_error(f"unknown property '{key}' (known: {known})", pos, _end_of_last_token(parser))
        if key in properties:
            parser.raise_error(f"duplicate property '{key}'", pos, _end_of_last_token(parser))
        parser.parse_punctuation("=")
        value_pos = parser.pos
        try:
            properties[key] = _parse_value(parser, by_name[key])
        except ValueError as e:  # e.g. an integer out of range for i64
            parser.raise_error(f"invalid value for property '{key}': {e}", value_pos, parser.pos)
        if parser.parse_optional_punctuation(",") is None:
            break
    parser.parse_punctuation("}")
    return properties


def _flatten_outputs(out: Any) -> list[torch.Tensor]:
    import torch

    if out is None:
        return []
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for t in out]


# --- defining ops from overloads ---------------------------------------------------------------


def _mnemonic(qualname: str) -> str:
    packet, _, overload = qualname.split("::")[1].rpartition(".")
    return packet if overload == "default" else f"{packet}.{overload}"


def _class_name(mnemonic: str, *, keep_underscore: bool = False) -> str:
    """`max_pool2d.with_indices` -> `MaxPool2dWithIndicesOp`; with `keep_underscore` (the generated
    table) a leading `_` stays (`_log_softmax` -> `_LogSoftmaxOp`): it cannot collide with the
    public op's class."""
    words = [w for part in mnemonic.split(".") for w in part.split("_") if w]
    prefix = "_" * (len(mnemonic) - len(mnemonic.lstrip("_"))) if keep_underscore else ""
    return prefix + "".join(w[0].upper() + w[1:] for w in words) + "Op"


def _operand_constructs(sig: Signature) -> tuple[dict[str, Any], bool]:
    fields: dict[str, Any] = {}
    variadic_groups = 0
    for spec in sig.tensor_args:
        if spec.kind is ArgKind.TENSOR:
            fields[spec.field] = operand_def(TensorType)
        elif spec.kind is ArgKind.OPT_TENSOR:
            fields[spec.field] = opt_operand_def(TensorType)
            variadic_groups += 1
        else:
            fields[spec.field] = var_operand_def(TensorType)
            variadic_groups += 1
    return fields, variadic_groups > 1


def _property_constructs(sig: Signature) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for spec in sig.property_args:
        constraint = schema.PROPERTY_CONSTRAINTS[spec.kind]
        define = opt_prop_def if spec.has_default else prop_def
        fields[spec.field] = define(constraint, prop_name=spec.name)
    if any(s.kind is ArgKind.OPT_TENSOR_LIST for s in sig.args):
        fields["present"] = prop_def(base(DenseArrayBase), prop_name=PRESENT_MASK)
    return fields


def _result_constructs(sig: Signature) -> dict[str, Any]:
    if sig.variadic_result:
        return {sig.result_fields[0]: var_result_def(TensorType)}
    return {f: result_def(TensorType) for f in sig.result_fields}


def aten_op(target: Any, *, mnemonic: str | None = None, pure: bool = True, generated: bool = False) -> type[AtenOp]:
    """Define the IRDL op mirroring `target` from its schema: a qualified overload name
    (`"aten::view.default"`, whose schema entry dialects/aten_table.py holds, so no torch is needed)
    or a torch OpOverload (its live schema).

    Forge IR has value semantics, so a schema that mutates or aliases an argument (`add_`, `.out`,
    `resize_`) is refused (SchemaError): the importer rewrites in-place ops to their functional
    overloads first. Random ops of the generated table (torch.Tag.nondeterministic_seeded) are never
    Pure: two calls differ, so CSE and dead-code elimination must not merge or move them (the
    hand-written table decides for itself: scaled_dot_product_attention carries the tag for its
    dropout_p, yet Forge imports inference graphs where it is 0). `generated`: a class of
    the generated table (its class name keeps a leading underscore).
    """
    if isinstance(target, str):
        if target not in SIGNATURES:
            raise schema.SchemaError(f"{target}: not in dialects/aten_table.py (run scripts/gen_aten_ops.py)")
        qualname, entry = target, SIGNATURES[target]
    else:
        qualname, entry = schema.qualified_name(target), schema.schema_entry(target)
    tags = entry[3]
    if "mutable" in tags:
        raise schema.SchemaError(f"{_overload_text(qualname)}: mutates an argument (Forge ops are functional)")
    if generated and "nondeterministic_seeded" in tags:
        pure = False  # hand-defined ops say it themselves (sdpa is tagged for its dropout_p)
    sig = schema.signature(qualname, entry, _RESERVED_FIELDS)
    op_name = f"aten.{mnemonic or _mnemonic(qualname)}"
    operands, needs_segments = _operand_constructs(sig)
    namespace: dict[str, Any] = {
        "name": op_name,
        "__doc__": f"`{sig.schema}`",
        "__module__": __name__,
        **operands,
        **_property_constructs(sig),
        **_result_constructs(sig),
        "traits": traits_def(Pure()) if pure else traits_def(),
    }
    if needs_segments:
        namespace["irdl_options"] = (AttrSizedOperandSegments(as_property=True),)
    class_name = _class_name(op_name.removeprefix("aten."), keep_underscore=generated)
    cls = irdl_op_definition(type(class_name, (AtenOp,), namespace))
    # Class constants are set after definition: IRDL only accepts IR constructs in the namespace.
    cls.SIGNATURE = sig
    cls.NEEDS_SEGMENT_SIZES = needs_segments
    return cls


def _overload_text(qualname: str) -> str:
    """How torch prints an overload: `aten.add_.Tensor`."""
    return qualname.replace("::", ".")


_VALUE_SEMANTICS: dict[str, str] = {
    "aten::view.default": "aten::reshape.default",
    "aten::_unsafe_view.default": "aten::reshape.default",
}
"""Overloads whose result depends on input strides, and the stride-free overload that computes
the same values; `AtenOp.call` uses the latter (shape inference is unaffected). `VALUE_SEMANTICS`:
the same, keyed by torch OpOverloads (built on first use)."""


KERNEL_TYPED: frozenset[str] = frozenset(
    {
        "aten::native_batch_norm.default",
        "aten::_native_batch_norm_legit.default",
        "aten::_native_batch_norm_legit.no_stats",
        "aten::_native_batch_norm_legit_functional.default",
        "aten::_native_batch_norm_legit_no_training.default",
        "aten::native_layer_norm.default",
        "aten::native_group_norm.default",
        "aten::native_dropout.default",
        "aten::_weight_norm_interface.default",
    }
)
"""Overloads whose result dtypes torch's meta kernel gets wrong for some operand dtypes (the norms'
saved statistics: the CPU kernel keeps a half input's dtype, or gives the float32 of float32
parameters; meta always float32, or always the input's; a dropout of an empty tensor gives a
float mask; the fused weight norm's norm, in g's shape and float32 for half inputs, where meta
keeps the reduced dims): their result types are the CPU kernel's, run on zeros of the operand types (meta's
when the operands are too large to allocate). torch.export's fake tensors get these wrong too
(`EXPORT_TYPES_DIFFER`)."""

EXPORT_TYPES_DIFFER: frozenset[str] = KERNEL_TYPED | {"aten::ldexp.Tensor", "aten::pow.Tensor_Scalar"}
"""Overloads whose result dtypes in torch.export's metadata (fake tensors) differ from the kernel's
for some operand dtypes (also ldexp of an integer by a half exponent, a bool to a bool power): the
importer types them by inference (`AtenOp.infer_result_types`) instead of the export metadata."""

_BATCH_NORMS = (
    "aten::native_batch_norm.default",
    "aten::_native_batch_norm_legit.default",
    "aten::_native_batch_norm_legit.no_stats",
    "aten::_native_batch_norm_legit_functional.default",
    "aten::_native_batch_norm_legit_no_training.default",
)

_CHANNEL_PARAM_OPS = frozenset({*_BATCH_NORMS, "aten::batch_norm.default"})

_AUX_RESULTS: dict[str, frozenset[int]] = {
    **dict.fromkeys(_BATCH_NORMS, frozenset({1, 2})),
    "aten::_embedding_bag.default": frozenset({1, 2, 3}),
    "aten::_embedding_bag_forward_only.default": frozenset({1, 2, 3}),
}
"""Results whose shape the CPU and meta kernels disagree on (saved statistics, offsets only
backward passes read): the verifier checks only their dtype and rank, and `call` gives zeros of
the declared (meta) shape where the CPU kernel's shape differs; consumers must not rely on them.
Keyed by qualified name; `AUX_RESULTS`: the same keyed by torch OpOverloads (built on first use)."""


BACKWARD_BOOKKEEPING: dict[str, dict[int, str]] = {
    name: {1: "offset2bag", 2: "bag_size", 3: "max_indices"}
    for name in ("aten::_embedding_bag.default", "aten::_embedding_bag_forward_only.default")
}
"""AUX_RESULTS that only a backward pass reads and whose CPU-kernel shape depends on the mode
(max_indices is (bags, width) in max mode, (bags,) or (0,) otherwise): Forge does not compute them,
so the importer refuses a program that uses one instead of returning meta-shaped zeros."""


def _by_target(table: dict[str, Any]) -> dict[Any, Any]:
    return {schema.resolve_overload(name): value for name, value in table.items()}


_LAZY_TABLES: dict[str, Callable[[], Any]] = {
    "OPS_BY_TARGET": lambda: _by_target(_table("OPS_BY_NAME")),
    "ELEMENTWISE_TARGETS": lambda: set(_by_target(dict.fromkeys(_table("ELEMENTWISE_NAMES")))),
    "AUX_RESULTS": lambda: _by_target(_AUX_RESULTS),
    "BOOKKEEPING_BY_TARGET": lambda: _by_target(BACKWARD_BOOKKEEPING),
    "VALUE_SEMANTICS": lambda: {k: schema.resolve_overload(v) for k, v in _by_target(_VALUE_SEMANTICS).items()},
}


def __getattr__(name: str) -> Any:
    """What is built on first use: each op class (`aten.AddTensorOp`; see `op_named`), the tables of
    all of them (`SCHEMA_OPS`, `OPS_BY_NAME`, `ELEMENTWISE_NAMES`, the `Aten` dialect: they build
    every class, ~0.1 s), and the tables keyed by torch OpOverloads (`OPS_BY_TARGET`: what the
    importer looks up, `ELEMENTWISE_TARGETS`, `AUX_RESULTS`, `VALUE_SEMANTICS`: they import torch)."""
    if name in _DECLARED:
        return _op_class(name)
    return _table(name)


def _table(name: str) -> Any:
    value = globals().get(name)
    if value is None:
        factory = _LAZY_TABLES.get(name)
        if factory is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = globals()[name] = factory()  # built once: later reads (and monkeypatches) see this dict
    return value


# --- ops that are not ATen overloads ---------------------------------------------------------


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A tensor from the WeightStore, referenced by name: weights never appear in printed IR."""

    name = "aten.weight"
    weight_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, weight_name: str, result_type: Attribute):
        super().__init__(properties={"name": StringAttr(weight_name)}, result_types=[result_type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.weight_name.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> WeightOp:
        weight_name = parser.parse_str_literal()
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        op = cls(weight_name, parser.parse_type())
        if attributes:
            op.attributes.update(attributes.data)
        return op

    def verify_(self) -> None:
        if not isinstance(self.result.type, TensorType):
            raise VerifyException(f"{self.name}: result must be a tensor, got {self.result.type}")


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A small constant tensor held inline (folded masks, scalars); large ones become weights."""

    name = "aten.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.get_type()])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                "aten.constant expects a dense<...> : tensor<...> value", pos, _end_of_last_token(parser)
            )
        op = cls(value)
        if attributes := parser.parse_optional_attr_dict_with_keyword():
            op.attributes.update(attributes.data)
        return op

    @staticmethod
    def from_tensor(tensor: torch.Tensor) -> ConstantOp:
        return ConstantOp(dense_attr(tensor))

    def to_tensor(self) -> torch.Tensor:
        return dense_tensor(self.value)

    def verify_(self) -> None:
        if self.value.get_type() != self.result.type:
            raise VerifyException(
                f"{self.name}: value type {self.value.get_type()} does not match result type {self.result.type}"
            )


def dense_attr(tensor: torch.Tensor) -> DenseIntOrFPElementsAttr:
    """The dense attribute holding a (small) tensor's values."""
    import torch

    ty = tensor_type(tuple(tensor.shape), tensor.dtype)
    flat = tensor.detach().reshape(-1)
    if tensor.dtype.is_floating_point:
        values = flat.to(torch.float64).tolist()
    else:
        values = flat.to(torch.int64).tolist()
    return DenseIntOrFPElementsAttr.from_list(ty, values)


# --- the op table --------------------------------------------------------------------------------

# Overloads are named `aten::packet.overload`; their schemas are in dialects/aten_table.py.
from dialects.aten_table import FUSED as FUSED_OPS  # noqa: E402  (fused op name -> class name)
from dialects.aten_table import GENERATED  # noqa: E402

_NAMED_OPS: dict[str, dict[str, str]] = {
    "Shape and data movement": {
        "ViewOp": "aten::view.default",
        "ReshapeOp": "aten::reshape.default",
        "UnsafeViewOp": "aten::_unsafe_view.default",
        "PermuteOp": "aten::permute.default",
        "TransposeIntOp": "aten::transpose.int",
        "TOp": "aten::t.default",
        "ExpandOp": "aten::expand.default",
        "SliceTensorOp": "aten::slice.Tensor",
        "SelectIntOp": "aten::select.int",
        "SplitTensorOp": "aten::split.Tensor",
        "SplitWithSizesOp": "aten::split_with_sizes.default",
        "CatOp": "aten::cat.default",
        "StackOp": "aten::stack.default",
        "UnsqueezeOp": "aten::unsqueeze.default",
        "SqueezeOp": "aten::squeeze.default",
        "SqueezeDimOp": "aten::squeeze.dim",
        "SqueezeDimsOp": "aten::squeeze.dims",
        "FlattenUsingIntsOp": "aten::flatten.using_ints",
        "RepeatOp": "aten::repeat.default",
        "ContiguousOp": "aten::contiguous.default",
        "CloneOp": "aten::clone.default",
        "AliasOp": "aten::alias.default",
        "DetachOp": "aten::detach.default",
        "LiftFreshCopyOp": "aten::lift_fresh_copy.default",
    },
    "Lookups": {
        "EmbeddingOp": "aten::embedding.default",
        "GatherOp": "aten::gather.default",
        "IndexTensorOp": "aten::index.Tensor",
        "IndexSelectOp": "aten::index_select.default",
    },
    "Linear algebra": {
        "AddmmOp": "aten::addmm.default",
        "MmOp": "aten::mm.default",
        "BmmOp": "aten::bmm.default",
        "BaddbmmOp": "aten::baddbmm.default",
        "MatmulOp": "aten::matmul.default",
        "LinearOp": "aten::linear.default",
    },
    "Convolution and padding": {
        "Conv1dOp": "aten::conv1d.default",
        "Conv2dOp": "aten::conv2d.default",
        "Conv1dPaddingOp": "aten::conv1d.padding",
        "Conv2dPaddingOp": "aten::conv2d.padding",
        "ConvolutionOp": "aten::convolution.default",
        "ConvTranspose1dOp": "aten::conv_transpose1d.default",
        "ConvTranspose2dInputOp": "aten::conv_transpose2d.input",
        "PadOp": "aten::pad.default",
        "ConstantPadNdOp": "aten::constant_pad_nd.default",
    },
    "Elementwise arithmetic": {
        "AddTensorOp": "aten::add.Tensor",
        "AddScalarOp": "aten::add.Scalar",
        "SubTensorOp": "aten::sub.Tensor",
        "SubScalarOp": "aten::sub.Scalar",
        "RsubScalarOp": "aten::rsub.Scalar",
        "MulTensorOp": "aten::mul.Tensor",
        "MulScalarOp": "aten::mul.Scalar",
        "DivTensorOp": "aten::div.Tensor",
        "DivScalarOp": "aten::div.Scalar",
        "DivTensorModeOp": "aten::div.Tensor_mode",
        "PowTensorScalarOp": "aten::pow.Tensor_Scalar",
        "PowTensorTensorOp": "aten::pow.Tensor_Tensor",
        "MaximumOp": "aten::maximum.default",
        "MinimumOp": "aten::minimum.default",
        "ClampOp": "aten::clamp.default",
        "NegOp": "aten::neg.default",
        "AbsOp": "aten::abs.default",
        "ReciprocalOp": "aten::reciprocal.default",
        "SqrtOp": "aten::sqrt.default",
        "RsqrtOp": "aten::rsqrt.default",
        "ExpOp": "aten::exp.default",
        "LogOp": "aten::log.default",
        "SinOp": "aten::sin.default",
        "CosOp": "aten::cos.default",
        "ErfOp": "aten::erf.default",
    },
    "Activations": {
        "TanhOp": "aten::tanh.default",
        "SigmoidOp": "aten::sigmoid.default",
        "ReluOp": "aten::relu.default",
        "GeluOp": "aten::gelu.default",
        "SiluOp": "aten::silu.default",
    },
    "Reductions, normalization, attention": {
        "MeanDimOp": "aten::mean.dim",
        "MeanOp": "aten::mean.default",
        "SumDimIntListOp": "aten::sum.dim_IntList",
        "SumOp": "aten::sum.default",
        "AmaxOp": "aten::amax.default",
        "CumsumOp": "aten::cumsum.default",
        "DiffOp": "aten::diff.default",
        "SoftmaxIntOp": "aten::softmax.int",
        "SoftmaxOp": "aten::_softmax.default",
        "LogSoftmaxIntOp": "aten::log_softmax.int",
        "LayerNormOp": "aten::layer_norm.default",
        "NativeLayerNormOp": "aten::native_layer_norm.default",
        "RmsNormOp": "aten::rms_norm.default",
        "ScaledDotProductAttentionOp": "aten::scaled_dot_product_attention.default",
    },
    "Pooling, normalization and resampling": {
        "MaxPool1dOp": "aten::max_pool1d.default",
        "MaxPool2dOp": "aten::max_pool2d.default",
        "AvgPool1dOp": "aten::avg_pool1d.default",
        "AvgPool2dOp": "aten::avg_pool2d.default",
        "AdaptiveAvgPool1dOp": "aten::adaptive_avg_pool1d.default",
        "AdaptiveAvgPool2dOp": "aten::adaptive_avg_pool2d.default",
        "BatchNormOp": "aten::batch_norm.default",
        "UpsampleNearest1dVecOp": "aten::upsample_nearest1d.vec",
        "UpsampleNearest2dVecOp": "aten::upsample_nearest2d.vec",
        "UpsampleLinear1dVecOp": "aten::upsample_linear1d.vec",
        "UpsampleBilinear2dVecOp": "aten::upsample_bilinear2d.vec",
    },
    "Masks, comparisons, logic": {
        "WhereSelfOp": "aten::where.self",
        "WhereScalarOtherOp": "aten::where.ScalarOther",
        "WhereScalarSelfOp": "aten::where.ScalarSelf",
        "MaskedFillScalarOp": "aten::masked_fill.Scalar",
        "MaskedFillTensorOp": "aten::masked_fill.Tensor",
        "TriuOp": "aten::triu.default",
        "TrilOp": "aten::tril.default",
        "EqTensorOp": "aten::eq.Tensor",
        "EqScalarOp": "aten::eq.Scalar",
        "NeTensorOp": "aten::ne.Tensor",
        "NeScalarOp": "aten::ne.Scalar",
        "LtTensorOp": "aten::lt.Tensor",
        "LtScalarOp": "aten::lt.Scalar",
        "LeTensorOp": "aten::le.Tensor",
        "LeScalarOp": "aten::le.Scalar",
        "GtTensorOp": "aten::gt.Tensor",
        "GtScalarOp": "aten::gt.Scalar",
        "GeTensorOp": "aten::ge.Tensor",
        "GeScalarOp": "aten::ge.Scalar",
        "BitwiseAndTensorOp": "aten::bitwise_and.Tensor",
        "BitwiseOrTensorOp": "aten::bitwise_or.Tensor",
        "BitwiseNotOp": "aten::bitwise_not.default",
        "AndTensorOp": "aten::__and__.Tensor",
        "OrTensorOp": "aten::__or__.Tensor",
        "LogicalNotOp": "aten::logical_not.default",
        "LogicalAndOp": "aten::logical_and.default",
    },
    "Conversions, dropout, assertions": {
        "ToDtypeOp": "aten::to.dtype",
        "ToDtypeLayoutOp": "aten::to.dtype_layout",
        "ToDeviceOp": "aten::to.device",
        "ToCopyOp": "aten::_to_copy.default",
        "DropoutOp": "aten::dropout.default",  # not Pure
        "AssertTensorMetadataOp": "aten::_assert_tensor_metadata.default",  # not Pure
    },
    "Tensor factories": {
        "ArangeOp": "aten::arange.default",
        "ArangeStartOp": "aten::arange.start",
        "ArangeStartStepOp": "aten::arange.start_step",
        "FullOp": "aten::full.default",
        "OnesOp": "aten::ones.default",
        "ZerosOp": "aten::zeros.default",
        "NewOnesOp": "aten::new_ones.default",
        "NewZerosOp": "aten::new_zeros.default",
        "FullLikeOp": "aten::full_like.default",
        "OnesLikeOp": "aten::ones_like.default",
        "ZerosLikeOp": "aten::zeros_like.default",
        "ScalarTensorOp": "aten::scalar_tensor.default",
    },
}
"""The hand-named ops by family (the headings of the IR reference): class name -> overload (qualified name)."""

_NOT_PURE = frozenset({"DropoutOp", "AssertTensorMetadataOp"})


def _declarations() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every schema op of the dialect, in definition order: class name -> (overload, `aten_op` options).

    The hand-named ops first, then Forge's fused ops (created by fuse-ops and layout; see
    dialects/fused_kernels.py; FusedLinearOp, MatmulTransposedOp, AddLayerNormOp, ...), then every
    other core overload and what torch.export leaves in graphs in practice: generated from the name
    table in dialects/aten_table.py (scripts/gen_aten_ops.py), one class each (`_LogSoftmaxOp`,
    `MaxDimOp`, `TopkOp`, ...), after the hand-named ops so each overload is defined once."""
    found = {
        name: (qualname, {"pure": name not in _NOT_PURE})
        for family in _NAMED_OPS.values()
        for name, qualname in family.items()
    }
    for mnemonic, class_name in FUSED_OPS.items():
        found[class_name] = (f"forge::{mnemonic}.default", {"mnemonic": mnemonic})
    for name in GENERATED:
        class_name = _class_name(_mnemonic(f"aten::{name}"), keep_underscore=True)
        assert class_name not in found and class_name not in globals(), f"{name}: class name {class_name} is taken"
        found[class_name] = (f"aten::{name}", {"generated": True})
    return found


_DECLARED = _declarations()
"""Class name -> (overload, options) of every schema op; the classes are built on first use."""

_CLASS_BY_OP_NAME: dict[str, str] = {
    f"aten.{options.get('mnemonic') or _mnemonic(qualname)}": name for name, (qualname, options) in _DECLARED.items()
}
"""Op name (`aten.add.Tensor`) -> class name, for the context's lookup by name."""
assert len(_CLASS_BY_OP_NAME) == len(_DECLARED), "two schema ops share an op name"

_CLASS_BY_QUALNAME: dict[str, str] = {qualname: name for name, (qualname, _) in _DECLARED.items()}

_FUSED_FAMILY = "Forge's fused ops (created by fuse-ops and layout; see dialects/fused_kernels.py)"
OP_FAMILIES: dict[str, str] = {
    **{f"aten.{_mnemonic(q)}": family for family, ops in _NAMED_OPS.items() for q in ops.values()},
    **{f"aten.{mnemonic}": _FUSED_FAMILY for mnemonic in FUSED_OPS},
}
"""Op name -> family of the hand-named and fused ops (the IR reference groups them so; the
generated table's ops have none)."""


def _op_class(class_name: str) -> type[AtenOp]:
    """The op class `class_name`, built on first use (one IRDL definition costs ~0.2 ms; building all
    426 at import was most of `forge-opt`'s start-up)."""
    cls = globals().get(class_name)
    if cls is None:
        qualname, options = _DECLARED[class_name]
        cls = globals()[class_name] = aten_op(qualname, **options)
        assert cls.__name__ == class_name, (cls.__name__, class_name)
    return cls


def op_named(op_name: str) -> type[IRDLOperation] | None:
    """The `aten` op class named `op_name` (`aten.view`, `aten.add.Tensor`, `aten.weight`), built on
    first use; None if the dialect has no such op. What Forge's context looks ops up with."""
    if op_name in _NON_SCHEMA_OPS:
        return _NON_SCHEMA_OPS[op_name]
    class_name = _CLASS_BY_OP_NAME.get(op_name)
    return _op_class(class_name) if class_name is not None else None


def op_for(qualname: str) -> type[AtenOp] | None:
    """The op class of overload `qualname` (`aten::view.default`), built on first use; None if the
    dialect does not define it."""
    class_name = _CLASS_BY_QUALNAME.get(qualname)
    return _op_class(class_name) if class_name is not None else None


_NON_SCHEMA_OPS: dict[str, type[IRDLOperation]] = {WeightOp.name: WeightOp, ConstantOp.name: ConstantOp}


def _schema_ops() -> list[type[AtenOp]]:
    return [_op_class(name) for name in _DECLARED]


# The tables of every schema op (each builds all the classes on first read):
# - SCHEMA_OPS: the classes in definition order;
# - OPS_BY_NAME: the class of each overload, by qualified name (`aten::view.default`; `op_for` builds one);
# - ELEMENTWISE_NAMES: the elementwise overloads (aten_schema.is_elementwise): those torch tags `pointwise`
#   (minus NOT_BROADCASTING), plus UNTAGGED_POINTWISE: their result shape is the broadcast of their
#   operands'; `ELEMENTWISE_TARGETS`: the same as torch OpOverloads;
# - Aten: the dialect with every op (Forge's context looks ops up one by one instead, `op_named`).
_LAZY_TABLES.update(
    {
        "SCHEMA_OPS": _schema_ops,
        "OPS_BY_NAME": lambda: {cls.SIGNATURE.qualname: cls for cls in _schema_ops()},
        "ELEMENTWISE_NAMES": lambda: {cls.SIGNATURE.qualname for cls in _schema_ops() if is_elementwise(cls.SIGNATURE)},
        "Aten": lambda: Dialect("aten", [WeightOp, ConstantOp, *_schema_ops()], []),
    }
)
