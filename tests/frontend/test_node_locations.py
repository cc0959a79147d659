"""forge.frontend.node_locations: each exported node's location is the frame torch itself would report,
recorded without torch's whole-stack trace, and the recording is undone after the export."""

import inspect

import pytest
import torch
from torch.fx.proxy import TracerBase

from forge.frontend.export import ExportError, export_model
from forge.frontend.node_locations import location_text, recorded_model_frames
from forge.models import build_model, example_inputs


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x).relu()  # LINE_INNER


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) * 2  # LINE_OUTER


def _line(marker: str) -> int:
    lines, start = inspect.getsourcelines(Inner if marker == "LINE_INNER" else Outer)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def _locations(program) -> dict[str, str]:
    return {n.name: location_text(n) for n in program.graph.nodes if n.op == "call_function"}


def test_ops_are_located_at_the_innermost_model_forward():
    program, _, _ = export_model(Outer(), (torch.randn(2, 4),))
    located = _locations(program)
    here = __file__
    assert located["linear"] == f"{here}:{_line('LINE_INNER')}"  # nn.Linear's own forward is torch's
    assert located["relu"] == f"{here}:{_line('LINE_INNER')}"
    assert located["mul"] == f"{here}:{_line('LINE_OUTER')}"
    assert all(n.meta["stack_trace"].count("File ") == 1 for n in program.graph.nodes if n.op == "call_function")


@pytest.mark.parametrize("name", ["gpt2", "resnet"])
def test_locations_equal_torchs_own_stack_traces(name):
    model = build_model(name, layers=1).eval()
    args = tuple(example_inputs(name, seq_len=8))
    with torch.no_grad():
        torchs = torch.export.export(model, args)
        with recorded_model_frames():
            ours = torch.export.export(model, args)
    assert [(n.name, location_text(n)) for n in ours.graph.nodes] == [
        (n.name, location_text(n)) for n in torchs.graph.nodes
    ]


class Failing(torch.nn.Module):
    def forward(self, x):
        return x.view(-1, 7)


def test_the_recording_is_undone_after_a_failed_export():
    original = TracerBase.create_node
    with pytest.raises(ExportError):
        export_model(Failing(), (torch.randn(3, 4),))
    assert TracerBase.create_node is original
    assert torch.fx.config.do_not_emit_stack_traces is False


def _rows_and_columns(x):
    rows, columns = x.shape  # LINE_UNPACK
    return rows * columns


class Unpacking(torch.nn.Module):
    def forward(self, x):
        return x * _rows_and_columns(x)


@pytest.mark.parametrize("entry", ["export_model", "import_module"])
def test_an_export_failure_names_the_model_code_that_raised(entry):
    from forge.frontend.fx_importer import import_module

    lines, start = inspect.getsourcelines(_rows_and_columns)
    line = start + next(i for i, text in enumerate(lines) if "LINE_UNPACK" in text)
    with pytest.raises(ExportError) as caught:
        if entry == "export_model":
            export_model(Unpacking(), (torch.randn(2, 3, 4),))
        else:
            import_module(Unpacking(), (torch.randn(2, 3, 4),))
    assert str(caught.value).startswith(
        f"torch.export of Unpacking failed at {__file__}:{line} (_rows_and_columns): ValueError: too many values"
    )
