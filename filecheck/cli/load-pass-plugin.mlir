// --load-pass-plugin=FILE (mlir-opt's flag): forge-opt imports a Python file whose passes
// register with forge.driver.registry.register_pass; they run, show in --help, and reach reproducers.
// Every way loading can fail is one diagnostic at the file (and line), exit code 1.
// RUN: forge-opt --load-pass-plugin %S/inputs/plugins/negate_exp.py %s -p negate-exp | filecheck %s
// RUN: forge-opt --load-pass-plugin=%S/inputs/plugins/negate_exp.py --help | filecheck %s --check-prefix=HELP
// RUN: not forge-opt %s -p negate-exp 2>&1 | filecheck %s --check-prefix=UNLOADED
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/missing.py %s 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/syntax_error.py %s 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/raises.py %s 2>&1 | filecheck %s --check-prefix=RAISES
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/registers_nothing.py %s 2>&1 | filecheck %s --check-prefix=NOTHING
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/clash.py %s 2>&1 | filecheck %s --check-prefix=CLASH

// CHECK:      func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:   %0 = aten.neg %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %e = aten.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// HELP:      --load-pass-plugin FILE
// HELP:      Forge passes
// HELP:        exp-to-arith {{ *}}Test plug-in: exp(x) -> arith.negf(x), which the interpreter cannot run.
// HELP:        negate-exp {{ *}}Test plug-in: exp(x) -> exp(-x) (wrong on purpose).

// UNLOADED:   forge-opt: error: unknown pass 'negate-exp'

// MISSING-NOT: Traceback
// MISSING:    {{.*}}inputs/plugins/missing.py: error: cannot load pass plug-in: no such file
// SYNTAX-NOT: Traceback
// SYNTAX:     {{.*}}inputs/plugins/syntax_error.py:3:12: error: invalid Python in pass plug-in: invalid syntax
// RAISES-NOT: Traceback
// RAISES:     {{.*}}inputs/plugins/raises.py:6: error: pass plug-in raised KeyError: 'beta'
// NOTHING-NOT: Traceback
// NOTHING:    {{.*}}inputs/plugins/registers_nothing.py: error: the pass plug-in registered no pass (decorate a ModulePass subclass with forge.driver.registry.register_pass)
// CLASH-NOT: Traceback
// CLASH:      {{.*}}inputs/plugins/clash.py:10: error: pass plug-in raised ValueError: a pass named 'fold' is already registered
