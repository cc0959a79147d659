// A one-layer GPT-2 (hidden 64, 4 heads, vocab 512, eager attention, seeded random weights) as
// Forge imports it from torch.export into the `aten` dialect, for 8 tokens. The weights stay in
// the WeightStore; `aten.weight` names them. Regenerate with
//   python -c "from forge.models import build_model, example_inputs; from forge.frontend.fx_importer import import_module; print(import_module(build_model('gpt2', layers=1, attn='eager', small=True), example_inputs('gpt2', seq_len=8, small=True)).module)" > examples/demo.mlir
// (then restore this header). Try:
//   forge-opt examples/demo.mlir -p dce,cse
//   forge-opt examples/demo.mlir -p dce,cse,fold,fuse-attention,fuse-ops,layout

builtin.module {
  func.func @forward(%input_ids: tensor<1x8xi64>) -> tensor<1x8x512xf32> {
    %p_hf_transformer_wte_weight = aten.weight "hf.transformer.wte.weight" : tensor<512x64xf32>
    %p_hf_transformer_wpe_weight = aten.weight "hf.transformer.wpe.weight" : tensor<128x64xf32>
    %p_hf_transformer_h_0_ln_1_weight = aten.weight "hf.transformer.h.0.ln_1.weight" : tensor<64xf32>
    %p_hf_transformer_h_0_ln_1_bias = aten.weight "hf.transformer.h.0.ln_1.bias" : tensor<64xf32>
    %p_hf_transformer_h_0_attn_c_attn_weight = aten.weight "hf.transformer.h.0.attn.c_attn.weight" : tensor<64x192xf32>
    %p_hf_transformer_h_0_attn_c_attn_bias = aten.weight "hf.transformer.h.0.attn.c_attn.bias" : tensor<192xf32>
    %p_hf_transformer_h_0_attn_c_proj_weight = aten.weight "hf.transformer.h.0.attn.c_proj.weight" : tensor<64x64xf32>
    %p_hf_transformer_h_0_attn_c_proj_bias = aten.weight "hf.transformer.h.0.attn.c_proj.bias" : tensor<64xf32>
    %p_hf_transformer_h_0_ln_2_weight = aten.weight "hf.transformer.h.0.ln_2.weight" : tensor<64xf32>
    %p_hf_transformer_h_0_ln_2_bias = aten.weight "hf.transformer.h.0.ln_2.bias" : tensor<64xf32>
    %p_hf_transformer_h_0_mlp_c_fc_weight = aten.weight "hf.transformer.h.0.mlp.c_fc.weight" : tensor<64x128xf32>
    %p_hf_transformer_h_0_mlp_c_fc_bias = aten.weight "hf.transformer.h.0.mlp.c_fc.bias" : tensor<128xf32>
    %p_hf_transformer_h_0_mlp_c_proj_weight = aten.weight "hf.transformer.h.0.mlp.c_proj.weight" : tensor<128x64xf32>
    %p_hf_transformer_h_0_mlp_c_proj_bias = aten.weight "hf.transformer.h.0.mlp.c_proj.bias" : tensor<64xf32>
    %p_hf_transformer_ln_f_weight = aten.weight "hf.transformer.ln_f.weight" : tensor<64xf32>
    %p_hf_transformer_ln_f_bias = aten.weight "hf.transformer.ln_f.bias" : tensor<64xf32>
    %view = aten.view %input_ids {size = [-1, 8]} : (tensor<1x8xi64>) -> tensor<1x8xi64>
    %embedding = aten.embedding %p_hf_transformer_wte_weight, %view : (tensor<512x64xf32>, tensor<1x8xi64>) -> tensor<1x8x64xf32>
    %arange = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add = aten.add.Scalar %arange {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %unsqueeze = aten.unsqueeze %add {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %embedding_1 = aten.embedding %p_hf_transformer_wpe_weight, %unsqueeze : (tensor<128x64xf32>, tensor<1x8xi64>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %embedding_1 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to = aten.to.dtype_layout %embedding_1 {dtype = f32, layout = "strided", device = "cpu"} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %add_1 = aten.add.Tensor %embedding, %to : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %slice = aten.slice.Tensor %unsqueeze {dim = 1, start = 0, end = 1} : (tensor<1x8xi64>) -> tensor<1x1xi64>
    %sub = aten.sub.Scalar %slice {other = 1} : (tensor<1x1xi64>) -> tensor<1x1xi64>
    %diff = aten.diff %unsqueeze, %sub, none : (tensor<1x8xi64>, tensor<1x1xi64>) -> tensor<1x8xi64>
    %ne = aten.ne.Scalar %diff {other = 1} : (tensor<1x8xi64>) -> tensor<1x8xi1>
    %cumsum = aten.cumsum %ne {dim = -1} : (tensor<1x8xi1>) -> tensor<1x8xi64>
    %expand = aten.expand %unsqueeze {size = [1, -1]} : (tensor<1x8xi64>) -> tensor<1x8xi64>
    %arange_1 = aten.arange {end = 1, device = "cpu", pin_memory = false} : () -> tensor<1xi64>
    %arange_2 = aten.arange {end = 1, device = "cpu", pin_memory = false} : () -> tensor<1xi64>
    %arange_3 = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add_2 = aten.add.Scalar %arange_3 {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %arange_4 = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add_3 = aten.add.Scalar %arange_4 {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %unsqueeze_1 = aten.unsqueeze %arange_1 {dim = 1} : (tensor<1xi64>) -> tensor<1x1xi64>
    %unsqueeze_2 = aten.unsqueeze %unsqueeze_1 {dim = 2} : (tensor<1x1xi64>) -> tensor<1x1x1xi64>
    %unsqueeze_3 = aten.unsqueeze %unsqueeze_2 {dim = 3} : (tensor<1x1x1xi64>) -> tensor<1x1x1x1xi64>
    %unsqueeze_4 = aten.unsqueeze %arange_2 {dim = 0} : (tensor<1xi64>) -> tensor<1x1xi64>
    %unsqueeze_5 = aten.unsqueeze %unsqueeze_4 {dim = 2} : (tensor<1x1xi64>) -> tensor<1x1x1xi64>
    %unsqueeze_6 = aten.unsqueeze %unsqueeze_5 {dim = 3} : (tensor<1x1x1xi64>) -> tensor<1x1x1x1xi64>
    %unsqueeze_7 = aten.unsqueeze %add_2 {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %unsqueeze_8 = aten.unsqueeze %unsqueeze_7 {dim = 1} : (tensor<1x8xi64>) -> tensor<1x1x8xi64>
    %unsqueeze_9 = aten.unsqueeze %unsqueeze_8 {dim = 3} : (tensor<1x1x8xi64>) -> tensor<1x1x8x1xi64>
    %unsqueeze_10 = aten.unsqueeze %add_3 {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %unsqueeze_11 = aten.unsqueeze %unsqueeze_10 {dim = 1} : (tensor<1x8xi64>) -> tensor<1x1x8xi64>
    %unsqueeze_12 = aten.unsqueeze %unsqueeze_11 {dim = 2} : (tensor<1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %new_ones = aten.new_ones %unsqueeze_9 {size = [], dtype = i1, pin_memory = false} : (tensor<1x1x8x1xi64>) -> tensor<i1>
    %index = aten.index.Tensor %expand, [%unsqueeze_3, %unsqueeze_9] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64>
    %index_1 = aten.index.Tensor %expand, [%unsqueeze_3, %unsqueeze_12] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %le = aten.le.Tensor %index_1, %index : (tensor<1x1x1x8xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x8xi1>
    aten._assert_tensor_metadata %le {dtype = i1, device = "cpu", layout = "strided"} : (tensor<1x1x8x8xi1>) -> ()
    %to_1 = aten.to.dtype_layout %le {dtype = i1, layout = "strided", device = "cpu"} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %and = aten.__and__.Tensor %new_ones, %to_1 : (tensor<i1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %index_2 = aten.index.Tensor %cumsum, [%unsqueeze_3, %unsqueeze_9] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64>
    %index_3 = aten.index.Tensor %cumsum, [%unsqueeze_3, %unsqueeze_12] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %eq = aten.eq.Tensor %index_2, %index_3 : (tensor<1x1x8x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x8x8xi1>
    aten._assert_tensor_metadata %eq {dtype = i1, device = "cpu", layout = "strided"} : (tensor<1x1x8x8xi1>) -> ()
    %to_2 = aten.to.dtype_layout %eq {dtype = i1, layout = "strided", device = "cpu"} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %and_1 = aten.__and__.Tensor %and, %to_2 : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %expand_1 = aten.expand %and_1 {size = [1, -1, 8, 8]} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %zeros = aten.zeros {size = [], dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<f32>
    %where = aten.where.ScalarOther %expand_1, %zeros {other = -3.4028234663852886e+38} : (tensor<1x1x8x8xi1>, tensor<f32>) -> tensor<1x1x8x8xf32>
    %dropout = aten.dropout %add_1 {p = 0.0, train = false} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %layer_norm = aten.layer_norm %dropout, %p_hf_transformer_h_0_ln_1_weight, %p_hf_transformer_h_0_ln_1_bias {normalized_shape = [64], cudnn_enable = false} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %view_1 = aten.view %layer_norm {size = [-1, 64]} : (tensor<1x8x64xf32>) -> tensor<8x64xf32>
    %addmm = aten.addmm %p_hf_transformer_h_0_attn_c_attn_bias, %view_1, %p_hf_transformer_h_0_attn_c_attn_weight : (tensor<192xf32>, tensor<8x64xf32>, tensor<64x192xf32>) -> tensor<8x192xf32>
    %view_2 = aten.view %addmm {size = [1, 8, 192]} : (tensor<8x192xf32>) -> tensor<1x8x192xf32>
    %split, %split_1, %split_2 = aten.split.Tensor %view_2 {split_size = 64, dim = 2} : (tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
    %view_3 = aten.view %split_1 {size = [1, 8, -1, 16]} : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
    %transpose = aten.transpose.int %view_3 {dim0 = 1, dim1 = 2} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
    %view_4 = aten.view %split_2 {size = [1, 8, -1, 16]} : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
    %transpose_1 = aten.transpose.int %view_4 {dim0 = 1, dim1 = 2} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
    %view_5 = aten.view %split {size = [1, 8, -1, 16]} : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
    %transpose_2 = aten.transpose.int %view_5 {dim0 = 1, dim1 = 2} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
    %transpose_3 = aten.transpose.int %transpose {dim0 = -1, dim1 = -2} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
    %matmul = aten.matmul %transpose_2, %transpose_3 : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
    %mul = aten.mul.Scalar %matmul {other = 0.25} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %add_4 = aten.add.Tensor %mul, %where : (tensor<1x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x8x8xf32>
    %softmax = aten.softmax.int %add_4 {dim = -1} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    aten._assert_tensor_metadata %softmax {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x4x8x8xf32>) -> ()
    %to_3 = aten.to.dtype %softmax {dtype = f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %dropout_1 = aten.dropout %to_3 {p = 0.0, train = false} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %matmul_1 = aten.matmul %dropout_1, %transpose_1 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    %transpose_4 = aten.transpose.int %matmul_1 {dim0 = 1, dim1 = 2} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
    %reshape = aten.reshape %transpose_4 {shape = [1, 8, -1]} : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
    %view_6 = aten.view %reshape {size = [-1, 64]} : (tensor<1x8x64xf32>) -> tensor<8x64xf32>
    %addmm_1 = aten.addmm %p_hf_transformer_h_0_attn_c_proj_bias, %view_6, %p_hf_transformer_h_0_attn_c_proj_weight : (tensor<64xf32>, tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    %view_7 = aten.view %addmm_1 {size = [1, 8, 64]} : (tensor<8x64xf32>) -> tensor<1x8x64xf32>
    %dropout_2 = aten.dropout %view_7 {p = 0.0, train = false} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %add_5 = aten.add.Tensor %dropout_2, %dropout : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %layer_norm_1 = aten.layer_norm %add_5, %p_hf_transformer_h_0_ln_2_weight, %p_hf_transformer_h_0_ln_2_bias {normalized_shape = [64], cudnn_enable = false} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %view_8 = aten.view %layer_norm_1 {size = [-1, 64]} : (tensor<1x8x64xf32>) -> tensor<8x64xf32>
    %addmm_2 = aten.addmm %p_hf_transformer_h_0_mlp_c_fc_bias, %view_8, %p_hf_transformer_h_0_mlp_c_fc_weight : (tensor<128xf32>, tensor<8x64xf32>, tensor<64x128xf32>) -> tensor<8x128xf32>
    %view_9 = aten.view %addmm_2 {size = [1, 8, 128]} : (tensor<8x128xf32>) -> tensor<1x8x128xf32>
    %mul_1 = aten.mul.Scalar %view_9 {other = 0.5} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %pow = aten.pow.Tensor_Scalar %view_9 {exponent = 3.0} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %mul_2 = aten.mul.Scalar %pow {other = 0.044715} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %add_6 = aten.add.Tensor %view_9, %mul_2 : (tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %mul_3 = aten.mul.Scalar %add_6 {other = 0.7978845608028654} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %tanh = aten.tanh %mul_3 : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %add_7 = aten.add.Scalar %tanh {other = 1.0} : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %mul_4 = aten.mul.Tensor %mul_1, %add_7 : (tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %view_10 = aten.view %mul_4 {size = [-1, 128]} : (tensor<1x8x128xf32>) -> tensor<8x128xf32>
    %addmm_3 = aten.addmm %p_hf_transformer_h_0_mlp_c_proj_bias, %view_10, %p_hf_transformer_h_0_mlp_c_proj_weight : (tensor<64xf32>, tensor<8x128xf32>, tensor<128x64xf32>) -> tensor<8x64xf32>
    %view_11 = aten.view %addmm_3 {size = [1, 8, 64]} : (tensor<8x64xf32>) -> tensor<1x8x64xf32>
    %dropout_3 = aten.dropout %view_11 {p = 0.0, train = false} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %add_8 = aten.add.Tensor %add_5, %dropout_3 : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %layer_norm_2 = aten.layer_norm %add_8, %p_hf_transformer_ln_f_weight, %p_hf_transformer_ln_f_bias {normalized_shape = [64], cudnn_enable = false} : (tensor<1x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %view_12 = aten.view %layer_norm_2 {size = [-1, 8, 64]} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %alias = aten.alias %view_12 : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %linear = aten.linear %alias, %p_hf_transformer_wte_weight, none : (tensor<1x8x64xf32>, tensor<512x64xf32>) -> tensor<1x8x512xf32>
    func.return %linear : tensor<1x8x512xf32>
  }
}
