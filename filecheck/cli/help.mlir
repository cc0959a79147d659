// --help lists every pass once: Forge's with the first sentence of their docstring, then xDSL's by
// name. An xDSL pass that a Forge pass overrides stays available as `xdsl-<name>` (cse, dce); Forge's
// own passes, which xDSL's registry also offers (forge/universe.py), are not listed twice.
// RUN: forge-opt --help | filecheck %s

// CHECK:      usage: forge-opt
// CHECK:      -p PASSES, --passes PASSES, --pass-pipeline PASSES
// CHECK:      Forge passes
// CHECK:        cse
// CHECK:        dce
// CHECK:      xDSL passes (--help-pass NAME describes one):
// CHECK:        {{.*}}canonicalize,
// CHECK:        xdsl-cse, xdsl-dce{{$}}
// CHECK-NOT:    xdsl-fold

// Each pass once, with its whole first sentence (never cut with "...") and its options (type,
// default, one line); --help-pass shows one pass in full; a misspelt --explain-pattern is an error.
// RUN: forge-opt --help | filecheck %s --check-prefix=OPTIONS
// RUN: forge-opt --help-pass fold | filecheck %s --check-prefix=ONE
// RUN: not forge-opt --help-pass fodl 2>&1 | filecheck %s --check-prefix=NOPASS
// RUN: not forge-opt --help-pass pow-to-mul 2>&1 | filecheck %s --check-prefix=PLUGIN
// RUN: forge-opt --help-pass canonicalize | filecheck %s --check-prefix=XDSL
// RUN: not forge-opt %s -p fold --explain-pattern DoubleNegaton 2>&1 | filecheck %s --check-prefix=NOPATTERN
// OPTIONS:      Forge passes
// OPTIONS-NOT:  ...{{$}}
// OPTIONS:        fold {{ +}}Fold constant subgraphs (weights too, when a WeightStore is attached) and algebraic
// OPTIONS-NEXT:   {{ +}}identities.
// OPTIONS-NEXT:   {{ +}}max-inline-elements: int = 64  Folded values with at most this many elements are inlined;
// OPTIONS:        fuse-ops
// OPTIONS:        {{ +}}gated-mlp: bool = true  Fuse act(x·Wg) * (x·Wu) into `aten.gated_mlp` (SwiGLU / GeGLU).
// OPTIONS:      xDSL passes
// ONE:          fold  (forge.transforms.fold.FoldPass)
// ONE:          Small results become inline `aten.constant`s
// ONE:          Options:
// ONE-NEXT:       max-inline-elements: int = 64
// ONE:          Example: forge-opt in.mlir -p 'fold{max-inline-elements=64}'
// NOPASS:       forge-opt: error: unknown pass 'fodl' for --help-pass; did you mean 'fold'? (a plug-in's passes are known once it is loaded: add --load-pass-plugin FILE)
// A name that is far from every pass gets no guess, and the hint that plug-ins must be loaded:
// PLUGIN:       forge-opt: error: unknown pass 'pow-to-mul' for --help-pass (a plug-in's passes are known once it is loaded: add --load-pass-plugin FILE)
// XDSL:         canonicalize  (xdsl.transforms.canonicalize.CanonicalizePass)
// XDSL:         Applies all canonicalization patterns.
// NOPATTERN:    forge-opt: error: unknown pattern 'DoubleNegaton' for --explain-pattern; did you mean 'DoubleNegation'? known patterns: AddZero, CancelTransposes, DoubleNegation,
// NOPATTERN-NOT: GraphPattern
