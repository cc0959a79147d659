// --timing (--mlir-timing) prints (to stderr) one row per phase and pass: wall ms, % of the total,
// op counts before -> after, and the patterns that fired most (ForgePatterns only). The rows add up to
// the run's wall clock: the first is the start-up (interpreter, imports) before forge-opt's main, the
// last what no other row covers (forge/cli/timing.py; tests/cli/test_opt_timing.py adds plug-ins and
// companion weights).
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,canonicalize,xdsl-cse' --timing -o /dev/null 2>&1 | filecheck %s

// CHECK:      Forge pass timing report
// CHECK:      Total Execution Time: {{[0-9.]+}} ms
// CHECK:      Wall ms {{ +}}% {{ +}}Ops before -> after  Name  [patterns fired]
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(start-up (process start to main))
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(set-up (flags, dialects, pass registry))
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(parse)
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}11 -> 9  test-arith-identities  [AddZero: 1, MulOne: 1]
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}9 -> 7  canonicalize
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}7 -> 7  xdsl-cse
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(verify)
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(pipeline (IR copies for reproducers, --verify-each, debug output))
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(output)
// CHECK-NEXT: {{[0-9.]+ +[0-9.]+%}} {{ +}}(other (reading the input, ...))
// CHECK-NEXT: {{[0-9.]+ +}}100.0% {{ +}}Total
