"""Forge's `cse` and `dce` are xDSL's under the same names: on any IR they print what xDSL's print.

The aten-specific parts are strict extensions (tests/transforms/test_cse.py, test_dce.py); here the
generic IR of xDSL's own lit tests (graph regions, regions with several blocks, read-only ops, dead
cycles) where Forge's one-sweep implementation hands over to xDSL's.
"""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from forge.driver.registry import make_context
from forge.transforms.cse import CsePass
from forge.transforms.dce import DcePass
from forge.transforms.generic_ir import is_plain_dataflow

CASES = {
    "graph-region": '"test.graph_region"() ({\n  %a = arith.addi %b, %c : i32\n  %b = arith.constant 1 : i32\n'
    '  %c = arith.constant 1 : i32\n  "foo.yield"(%a) : (i32) -> ()\n}) : () -> ()',
    "dead-cycle": '"test.op"() ({\n  %0 = "test.pureop"(%1) : (i32) -> i32\n  %1 = "test.pureop"(%0) : (i32) -> i32\n'
    '  "test.termop"() : () -> ()\n}) : () -> ()',
    "unreachable-block": "func.func @f() -> i32 {\n  %c = arith.constant 1 : i32\n  func.return %c : i32\n"
    "^dead:\n  %d = arith.constant 1 : i32\n  %e = arith.addi %d, %d : i32\n  func.return %e : i32\n}",
    "region-ops": "func.func @f(%a: i32, %b: i32) -> (i32, i32) {\n"
    '  %0 = "test.pureop"(%a) ({\n  ^bb0(%x: i32):\n    "test.region_yield"(%x) : (i32) -> ()\n  }) : (i32) -> i32\n'
    '  %1 = "test.pureop"(%a) ({\n  ^bb0(%y: i32):\n    "test.region_yield"(%y) : (i32) -> ()\n  }) : (i32) -> i32\n'
    "  func.return %0, %1 : i32, i32\n}",
    "plain": "func.func @f(%a: i32) -> i32 {\n  %u = arith.addi %a, %a : i32\n  %v = arith.addi %a, %a : i32\n"
    "  %dead = arith.muli %a, %a : i32\n  %w = arith.addi %u, %v : i32\n  func.return %w : i32\n}",
}


def _run(pass_, text: str) -> str:
    ctx: Context = make_context()
    ctx.allow_unregistered = True
    module = Parser(ctx, text).parse_module()
    pass_.apply(ctx, module)
    return str(module)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize(
    "forge_pass, xdsl_pass", [(CsePass(), CommonSubexpressionElimination()), (DcePass(), DeadCodeElimination())],
    ids=["cse", "dce"],
)
def test_forge_pass_prints_what_xdsl_pass_prints(name, forge_pass, xdsl_pass) -> None:
    assert _run(forge_pass, CASES[name]) == _run(xdsl_pass, CASES[name])


def test_the_fast_path_is_taken_only_on_plain_dataflow() -> None:
    ctx = make_context()
    ctx.allow_unregistered = True
    plain = {name: is_plain_dataflow(Parser(ctx, text).parse_module()) for name, text in CASES.items()}
    assert plain == {
        "graph-region": False, "dead-cycle": False, "unreachable-block": False, "region-ops": False, "plain": True,
    }


def test_cse_merges_and_drops_dead_ops_on_plain_dataflow() -> None:
    out = _run(CsePass(), CASES["plain"])
    assert out.count("arith.addi") == 2 and "arith.muli" not in out
