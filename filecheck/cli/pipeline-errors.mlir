// Mistakes in -p are one-line errors naming the pass, without a traceback.
// RUN: not forge-opt %s -p nosuch-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not forge-opt %s -p canonicalise 2>&1 | filecheck %s --check-prefix=SUGGEST
// RUN: not forge-opt %s -p 'canonicalize{foo=1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not forge-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not forge-opt %s.does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING

func.func @f(%a: i32) -> i32 {
  func.return %a : i32
}

// UNKNOWN:      forge-opt: error: unknown pass 'nosuch-pass' (`forge-opt --help` lists the passes; a plug-in's passes are known once it is loaded: add --load-pass-plugin FILE)
// UNKNOWN-NOT:  {{.}}

// SUGGEST:      forge-opt: error: unknown pass 'canonicalise'; did you mean 'canonicalize'{{.*}}? (`forge-opt --help` lists the passes{{.*}})
// SUGGEST-NOT:  {{.}}

// OPTION:       forge-opt: error: pass 'canonicalize' has no option 'foo'; it takes no options
// OPTION-NOT:   {{.}}

// SYNTAX:       forge-opt: error: invalid pass pipeline at column 14: expected argument name here
// SYNTAX-NEXT:    canonicalize{
// SYNTAX-NEXT:                 ^
// SYNTAX-NOT:   Traceback

// MISSING:      forge-opt: error: cannot open input file '{{.*}}.does-not-exist.mlir': No such file or directory
// MISSING-NOT:  {{.}}
