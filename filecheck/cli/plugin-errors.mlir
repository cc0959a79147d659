// A bug in a plug-in's pattern or pass is the user's error, not Forge's: one diagnostic at the op
// being rewritten, naming the pattern and the pass, exit 1; no traceback and no IR dump unless
// --show-traceback asks (the reproducer file keeps the traceback). A Python int where build_op
// wants an attribute names the op and the property.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/buggy_pattern.py %s -p buggy-pattern --reproducer-dir %t 2>&1 | filecheck %s
// RUN: filecheck %s --check-prefix=FILE < %t/forge-opt-reproducer.mlir
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/buggy_pattern.py %s -p buggy-pattern --show-traceback --no-reproducer 2>&1 | filecheck %s --check-prefix=TRACE
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/buggy_pattern.py %s -p int-for-attribute 2>&1 | filecheck %s --check-prefix=INT
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/buggy_pattern.py %s -p int-for-attribute --verify-each --no-reproducer 2>&1 | filecheck %s --check-prefix=INT-EACH

// CHECK-NOT:  Traceback
// CHECK-NOT:  "builtin.module"
// CHECK:      plugin-errors.mlir:[[# @LINE + 6]]:8: error: 'aten.exp' op pattern 'DivideExp' of pass 'buggy-pattern' raised ZeroDivisionError: division by zero
// CHECK-NEXT:   %e = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:      note: raised at {{.*}}inputs/plugins/buggy_pattern.py:27 (in match_and_rewrite)
// CHECK-NEXT: note: while running pass 'buggy-pattern' (#1 of 1)
// CHECK:      note: rerun with --show-traceback to print the Python traceback (the reproducer has it)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// FILE:      // forge-opt crash reproducer: the IR given to pass #1 'buggy-pattern', which raised:
// FILE:      // Python traceback of the exception:
// FILE:      //     scale = 1 / (len(op.results) - 1)
// FILE:      //   ZeroDivisionError: division by zero

// TRACE:      Traceback (most recent call last):
// TRACE:      ZeroDivisionError: division by zero
// TRACE:      error: 'aten.exp' op pattern 'DivideExp' of pass 'buggy-pattern' raised ZeroDivisionError

// INT-NOT:    AttributeError
// INT:        plugin-errors.mlir: error: 'aten.softmax.int' op property 'dim' is the Python int -1, not an attribute
// INT-NEXT:   note: the input verified, so a pass in the pipeline produced invalid IR; rerun with --verify-each to find it
// INT-EACH-NOT: AttributeError
// INT-EACH:   error: 'aten.softmax.int' op property 'dim' is the Python int -1, not an attribute
// INT-EACH:   note: the IR does not verify after pass 'int-for-attribute' (#1 of 1)
