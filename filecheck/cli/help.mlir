// --help lists every pass with the first sentence of its docstring: Forge's passes first,
// then xDSL's. An xDSL pass that a Forge pass overrides stays available as `xdsl-<name>`.
// RUN: forge-opt --help | filecheck %s

// CHECK:      usage: forge-opt
// CHECK:      -p PASSES, --passes PASSES
// CHECK:      Forge passes:
// CHECK:        cse
// CHECK:        dce
// CHECK:      xDSL passes:
// CHECK:        canonicalize {{ +}}Applies all canonicalization patterns.
// CHECK:        xdsl-cse
// CHECK:        xdsl-dce
