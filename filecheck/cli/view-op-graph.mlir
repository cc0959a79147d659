// RUN: forge-opt %s --view-op-graph 2>&1 >/dev/null | filecheck %s
// RUN: forge-opt %s --view-op-graph-output %t.dot | filecheck %s --check-prefix=IR
// RUN: filecheck %s < %t.dot
// RUN: forge-opt %s -p lower-aten-to-npuir,schedule-device-affinity,lower-npuir-to-buffer --view-op-graph 2>&1 >/dev/null | filecheck %s --check-prefix=BUF
// RUN: not forge-opt %s --view-op-graph-output %t.missing/g.dot 2>&1 | filecheck %s --check-prefix=ERR

// --view-op-graph writes the module (after the pipeline) as Graphviz DOT: one node per op and
// block argument, one edge per use, a cluster per function, then a legend. aten ops show the
// device lower-aten-to-npuir would give them (dashed, "?"); fused ops have a double border;
// weights are cylinders; names are DOT-escaped (the weight below has quotes and a backslash).

// The IR still goes to stdout, unchanged.
// IR: aten.fused_linear %x, %w, %b {activation = "relu"}

// CHECK:      digraph "view-op-graph.mlir" {
// CHECK:        subgraph cluster_1 {
// CHECK-NEXT:     label="func.func @mlp"; style=rounded; color=gray50;
// CHECK-NEXT:     v0 [label="%x : tensor<4x8xf32>", shape="invhouse", style="filled", fillcolor="white"];
// CHECK-NEXT:     v1 [label="aten.weight \"fc.\"odd\\name\"\"\n%w : tensor<16x8xf32>", shape="cylinder", style="filled", fillcolor="#eeeeee"];
// CHECK-NEXT:     v2 [label="aten.weight \"fc.bias\"\n%b : tensor<16xf32>", shape="cylinder", style="filled", fillcolor="#eeeeee"];
// CHECK-NEXT:     v3 [label="aten.fused_linear [npu?]\nfused relu\n%h : tensor<4x16xf32>", shape="box", style="filled,rounded,dashed", fillcolor="#9ecae1", peripheries="2", penwidth="2"];
// CHECK-NEXT:     v4 [label="aten.cumsum [cpu?]\n%c : tensor<4x16xf32>", shape="box", style="filled,rounded,dashed", fillcolor="#fdae6b"];
// CHECK-NEXT:     v5 [label="aten.view\n%v : tensor<4x16xf32>", shape="box", style="filled,rounded", fillcolor="#eeeeee"];
// CHECK-NEXT:     v6 [label="func.return", shape="house", style="filled", fillcolor="#eeeeee"];
// CHECK-NEXT:   }
// CHECK-NEXT:   v0 -> v3;
// CHECK-NEXT:   v1 -> v3;
// CHECK-NEXT:   v2 -> v3;
// CHECK-NEXT:   v3 -> v4;
// CHECK-NEXT:   v4 -> v5;
// CHECK-NEXT:   v5 -> v6;
// CHECK-NEXT:   subgraph cluster_legend {
// CHECK:          legend_predicted [label="aten op: predicted device [npu?]\n(lower-aten-to-npuir, npu-first)"
// CHECK:          legend_fused [label="fused kernel", {{.*}}peripheries="2", penwidth="2"];
// CHECK:        }
// CHECK-NEXT: }

// After lowering to buffer IR, devices are the ones the ops carry; transfers take their
// destination buffer's device; buffers are folders with dashed edges to their writers.
// BUF:      v1 [label="buffer.arena\n%arena0 : !buffer.arena<0, npu, 384>", shape="box", style="filled,rounded", fillcolor="#eeeeee"];
// BUF-NEXT: v2 [label="buffer.arena\n%arena1 : !buffer.arena<1, cpu, 512>", shape="box", style="filled,rounded", fillcolor="#eeeeee"];
// BUF-NEXT: v3 [label="buffer.alloc [npu]\n%b0 : !buffer.buf<0, npu, 128>", shape="folder", style="filled", fillcolor="#9ecae1"];
// BUF:      v10 [label="buffer.transfer [npu]\n%x_npu : tensor<4x8xf32>", shape="box", style="filled,rounded", fillcolor="#9ecae1"];
// BUF-NEXT: v11 [label="buffer.exec linear [npu]\nfused relu\n%h : tensor<4x16xf32>", shape="box", style="filled,rounded", fillcolor="#9ecae1", peripheries="2", penwidth="2"];
// BUF-NEXT: v12 [label="buffer.transfer [cpu]\n%h_cpu : tensor<4x16xf32>", shape="box", style="filled,rounded", fillcolor="#fdae6b"];
// BUF-NEXT: v13 [label="buffer.exec cumsum [cpu]\n%c : tensor<4x16xf32>", shape="box", style="filled,rounded", fillcolor="#fdae6b"];
// BUF:      v1 -> v3;
// BUF:      v3 -> v10 [style="dashed", color="gray50"];
// BUF-NOT:  legend_predicted
// BUF:      legend_buffer

// ERR: forge-opt: error: cannot write op graph to '{{.*}}g.dot': No such file or directory

func.func @mlp(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "fc.\"odd\\name\"" : tensor<16x8xf32>
  %b = aten.weight "fc.bias" : tensor<16xf32>
  %h = aten.fused_linear %x, %w, %b {activation = "relu"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %c = aten.cumsum %h {dim = 1} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = aten.view %c {size = [4, 16]} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %v : tensor<4x16xf32>
}
