// Input of filecheck/cli/verify-semantics-pipeline.mlir: a 1-layer small Llama (RoPE, grouped-query
// attention, SwiGLU, RMSNorm) as `forge compile llama --small --layers 1 --seq-len 8 --emit aten
// --pipeline ""` writes it; weights come from their types (no companion .safetensors).
builtin.module {
  func.func @forward(%input_ids: tensor<1x8xi64>) -> tensor<1x8x512xf32> {
    %p_hf_model_embed_tokens_weight = aten.weight "hf.model.embed_tokens.weight" : tensor<512x64xf32>
    %p_hf_model_layers_0_self_attn_q_proj_weight = aten.weight "hf.model.layers.0.self_attn.q_proj.weight" : tensor<64x64xf32>
    %p_hf_model_layers_0_self_attn_k_proj_weight = aten.weight "hf.model.layers.0.self_attn.k_proj.weight" : tensor<32x64xf32>
    %p_hf_model_layers_0_self_attn_v_proj_weight = aten.weight "hf.model.layers.0.self_attn.v_proj.weight" : tensor<32x64xf32>
    %p_hf_model_layers_0_self_attn_o_proj_weight = aten.weight "hf.model.layers.0.self_attn.o_proj.weight" : tensor<64x64xf32>
    %p_hf_model_layers_0_mlp_gate_proj_weight = aten.weight "hf.model.layers.0.mlp.gate_proj.weight" : tensor<128x64xf32>
    %p_hf_model_layers_0_mlp_up_proj_weight = aten.weight "hf.model.layers.0.mlp.up_proj.weight" : tensor<128x64xf32>
    %p_hf_model_layers_0_mlp_down_proj_weight = aten.weight "hf.model.layers.0.mlp.down_proj.weight" : tensor<64x128xf32>
    %p_hf_model_layers_0_input_layernorm_weight = aten.weight "hf.model.layers.0.input_layernorm.weight" : tensor<64xf32>
    %p_hf_model_layers_0_post_attention_layernorm_weight = aten.weight "hf.model.layers.0.post_attention_layernorm.weight" : tensor<64xf32>
    %p_hf_model_norm_weight = aten.weight "hf.model.norm.weight" : tensor<64xf32>
    %p_hf_lm_head_weight = aten.weight "hf.lm_head.weight" : tensor<512x64xf32>
    %b_hf_model_rotary_emb_inv_freq = aten.weight "hf.model.rotary_emb.inv_freq" : tensor<8xf32>
    %b_hf_model_rotary_emb_original_inv_freq = aten.weight "hf.model.rotary_emb.original_inv_freq" : tensor<8xf32>
    %embedding = aten.embedding %p_hf_model_embed_tokens_weight, %input_ids : (tensor<512x64xf32>, tensor<1x8xi64>) -> tensor<1x8x64xf32>
    %arange = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add = aten.add.Scalar %arange {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %unsqueeze = aten.unsqueeze %add {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %slice = aten.slice.Tensor %unsqueeze {dim = 1, start = 0, end = 1} : (tensor<1x8xi64>) -> tensor<1x1xi64>
    %sub = aten.sub.Scalar %slice {other = 1} : (tensor<1x1xi64>) -> tensor<1x1xi64>
    %diff = aten.diff %unsqueeze, %sub, none : (tensor<1x8xi64>, tensor<1x1xi64>) -> tensor<1x8xi64>
    %ne = aten.ne.Scalar %diff {other = 1} : (tensor<1x8xi64>) -> tensor<1x8xi1>
    %cumsum = aten.cumsum %ne {dim = -1} : (tensor<1x8xi1>) -> tensor<1x8xi64>
    %expand = aten.expand %unsqueeze {size = [1, -1]} : (tensor<1x8xi64>) -> tensor<1x8xi64>
    %arange_1 = aten.arange {end = 1, device = "cpu", pin_memory = false} : () -> tensor<1xi64>
    %arange_2 = aten.arange {end = 1, device = "cpu", pin_memory = false} : () -> tensor<1xi64>
    %arange_3 = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add_1 = aten.add.Scalar %arange_3 {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %arange_4 = aten.arange {end = 8, device = "cpu", pin_memory = false} : () -> tensor<8xi64>
    %add_2 = aten.add.Scalar %arange_4 {other = 0} : (tensor<8xi64>) -> tensor<8xi64>
    %unsqueeze_1 = aten.unsqueeze %arange_1 {dim = 1} : (tensor<1xi64>) -> tensor<1x1xi64>
    %unsqueeze_2 = aten.unsqueeze %unsqueeze_1 {dim = 2} : (tensor<1x1xi64>) -> tensor<1x1x1xi64>
    %unsqueeze_3 = aten.unsqueeze %unsqueeze_2 {dim = 3} : (tensor<1x1x1xi64>) -> tensor<1x1x1x1xi64>
    %unsqueeze_4 = aten.unsqueeze %arange_2 {dim = 0} : (tensor<1xi64>) -> tensor<1x1xi64>
    %unsqueeze_5 = aten.unsqueeze %unsqueeze_4 {dim = 2} : (tensor<1x1xi64>) -> tensor<1x1x1xi64>
    %unsqueeze_6 = aten.unsqueeze %unsqueeze_5 {dim = 3} : (tensor<1x1x1xi64>) -> tensor<1x1x1x1xi64>
    %unsqueeze_7 = aten.unsqueeze %add_1 {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %unsqueeze_8 = aten.unsqueeze %unsqueeze_7 {dim = 1} : (tensor<1x8xi64>) -> tensor<1x1x8xi64>
    %unsqueeze_9 = aten.unsqueeze %unsqueeze_8 {dim = 3} : (tensor<1x1x8xi64>) -> tensor<1x1x8x1xi64>
    %unsqueeze_10 = aten.unsqueeze %add_2 {dim = 0} : (tensor<8xi64>) -> tensor<1x8xi64>
    %unsqueeze_11 = aten.unsqueeze %unsqueeze_10 {dim = 1} : (tensor<1x8xi64>) -> tensor<1x1x8xi64>
    %unsqueeze_12 = aten.unsqueeze %unsqueeze_11 {dim = 2} : (tensor<1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %new_ones = aten.new_ones %unsqueeze_9 {size = [], dtype = i1, pin_memory = false} : (tensor<1x1x8x1xi64>) -> tensor<i1>
    %index = aten.index.Tensor %expand, [%unsqueeze_3, %unsqueeze_9] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64>
    %index_1 = aten.index.Tensor %expand, [%unsqueeze_3, %unsqueeze_12] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %le = aten.le.Tensor %index_1, %index : (tensor<1x1x1x8xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x8xi1>
    aten._assert_tensor_metadata %le {dtype = i1, device = "cpu", layout = "strided"} : (tensor<1x1x8x8xi1>) -> ()
    %to = aten.to.dtype_layout %le {dtype = i1, layout = "strided", device = "cpu"} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %and = aten.__and__.Tensor %new_ones, %to : (tensor<i1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %index_2 = aten.index.Tensor %cumsum, [%unsqueeze_3, %unsqueeze_9] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x8x1xi64>) -> tensor<1x1x8x1xi64>
    %index_3 = aten.index.Tensor %cumsum, [%unsqueeze_3, %unsqueeze_12] : (tensor<1x8xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi64>
    %eq = aten.eq.Tensor %index_2, %index_3 : (tensor<1x1x8x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x8x8xi1>
    aten._assert_tensor_metadata %eq {dtype = i1, device = "cpu", layout = "strided"} : (tensor<1x1x8x8xi1>) -> ()
    %to_1 = aten.to.dtype_layout %eq {dtype = i1, layout = "strided", device = "cpu"} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %and_1 = aten.__and__.Tensor %and, %to_1 : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %expand_1 = aten.expand %and_1 {size = [1, -1, 8, 8]} : (tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
    %zeros = aten.zeros {size = [], dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<f32>
    %where = aten.where.ScalarOther %expand_1, %zeros {other = -3.4028234663852886e+38} : (tensor<1x1x8x8xi1>, tensor<f32>) -> tensor<1x1x8x8xf32>
    %unsqueeze_13 = aten.unsqueeze %unsqueeze {dim = 2} : (tensor<1x8xi64>) -> tensor<1x8x1xi64>
    aten._assert_tensor_metadata %unsqueeze_13 {dtype = i64, device = "cpu", layout = "strided"} : (tensor<1x8x1xi64>) -> ()
    %to_2 = aten.to.dtype %unsqueeze_13 {dtype = f32} : (tensor<1x8x1xi64>) -> tensor<1x8x1xf32>
    aten._assert_tensor_metadata %b_hf_model_rotary_emb_inv_freq {dtype = f32, device = "cpu", layout = "strided"} : (tensor<8xf32>) -> ()
    %to_3 = aten.to.device %b_hf_model_rotary_emb_inv_freq {device = "cpu", dtype = f32} : (tensor<8xf32>) -> tensor<8xf32>
    %mul = aten.mul.Tensor %to_2, %to_3 : (tensor<1x8x1xf32>, tensor<8xf32>) -> tensor<1x8x8xf32>
    %cat = aten.cat [%mul, %mul] {dim = -1} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<1x8x16xf32>
    %cos = aten.cos %cat : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %mul_1 = aten.mul.Scalar %cos {other = 1.0} : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %sin = aten.sin %cat : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %mul_2 = aten.mul.Scalar %sin {other = 1.0} : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    aten._assert_tensor_metadata %mul_1 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x16xf32>) -> ()
    %to_4 = aten.to.dtype %mul_1 {dtype = f32} : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    aten._assert_tensor_metadata %mul_2 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x16xf32>) -> ()
    %to_5 = aten.to.dtype %mul_2 {dtype = f32} : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    aten._assert_tensor_metadata %embedding {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_6 = aten.to.dtype %embedding {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %pow = aten.pow.Tensor_Scalar %to_6 {exponent = 2} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mean = aten.mean.dim %pow {dim = [-1], keepdim = true} : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    %add_3 = aten.add.Scalar %mean {other = 1.0e-06} : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %rsqrt = aten.rsqrt %add_3 : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %mul_3 = aten.mul.Tensor %to_6, %rsqrt : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %mul_3 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_7 = aten.to.dtype %mul_3 {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mul_4 = aten.mul.Tensor %p_hf_model_layers_0_input_layernorm_weight, %to_7 : (tensor<64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %linear = aten.linear %mul_4, %p_hf_model_layers_0_self_attn_q_proj_weight, none : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %view = aten.view %linear {size = [1, 8, -1, 16]} : (tensor<1x8x64xf32>) -> tensor<1x8x4x16xf32>
    %transpose = aten.transpose.int %view {dim0 = 1, dim1 = 2} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
    %linear_1 = aten.linear %mul_4, %p_hf_model_layers_0_self_attn_k_proj_weight, none : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %view_1 = aten.view %linear_1 {size = [1, 8, -1, 16]} : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
    %transpose_1 = aten.transpose.int %view_1 {dim0 = 1, dim1 = 2} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
    %linear_2 = aten.linear %mul_4, %p_hf_model_layers_0_self_attn_v_proj_weight, none : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %view_2 = aten.view %linear_2 {size = [1, 8, -1, 16]} : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
    %transpose_2 = aten.transpose.int %view_2 {dim0 = 1, dim1 = 2} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
    %unsqueeze_14 = aten.unsqueeze %to_4 {dim = 1} : (tensor<1x8x16xf32>) -> tensor<1x1x8x16xf32>
    %unsqueeze_15 = aten.unsqueeze %to_5 {dim = 1} : (tensor<1x8x16xf32>) -> tensor<1x1x8x16xf32>
    %mul_5 = aten.mul.Tensor %transpose, %unsqueeze_14 : (tensor<1x4x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x4x8x16xf32>
    %slice_1 = aten.slice.Tensor %transpose {dim = 3, start = 0, end = 8} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
    %slice_2 = aten.slice.Tensor %transpose {dim = 3, start = 8, end = 9223372036854775807} : (tensor<1x4x8x16xf32>) -> tensor<1x4x8x8xf32>
    %neg = aten.neg %slice_2 : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %cat_1 = aten.cat [%neg, %slice_1] {dim = -1} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x16xf32>
    %mul_6 = aten.mul.Tensor %cat_1, %unsqueeze_15 : (tensor<1x4x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x4x8x16xf32>
    %add_4 = aten.add.Tensor %mul_5, %mul_6 : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    %mul_7 = aten.mul.Tensor %transpose_1, %unsqueeze_14 : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32>
    %slice_3 = aten.slice.Tensor %transpose_1 {dim = 3, start = 0, end = 8} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
    %slice_4 = aten.slice.Tensor %transpose_1 {dim = 3, start = 8, end = 9223372036854775807} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
    %neg_1 = aten.neg %slice_4 : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
    %cat_2 = aten.cat [%neg_1, %slice_3] {dim = -1} : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
    %mul_8 = aten.mul.Tensor %cat_2, %unsqueeze_15 : (tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32>
    %add_5 = aten.add.Tensor %mul_7, %mul_8 : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
    %unsqueeze_16 = aten.unsqueeze %add_5 {dim = 2} : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
    %expand_2 = aten.expand %unsqueeze_16 {size = [1, 2, 2, 8, 16]} : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
    %reshape = aten.reshape %expand_2 {shape = [1, 4, 8, 16]} : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
    %unsqueeze_17 = aten.unsqueeze %transpose_2 {dim = 2} : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
    %expand_3 = aten.expand %unsqueeze_17 {size = [1, 2, 2, 8, 16]} : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
    %reshape_1 = aten.reshape %expand_3 {shape = [1, 4, 8, 16]} : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
    %transpose_3 = aten.transpose.int %reshape {dim0 = 2, dim1 = 3} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
    %matmul = aten.matmul %add_4, %transpose_3 : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
    %mul_9 = aten.mul.Scalar %matmul {other = 0.25} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %add_6 = aten.add.Tensor %mul_9, %where : (tensor<1x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x8x8xf32>
    %softmax = aten.softmax.int %add_6 {dim = -1, dtype = f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    aten._assert_tensor_metadata %softmax {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x4x8x8xf32>) -> ()
    %to_8 = aten.to.dtype %softmax {dtype = f32} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %dropout = aten.dropout %to_8 {p = 0.0, train = false} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    %matmul_1 = aten.matmul %dropout, %reshape_1 : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    %transpose_4 = aten.transpose.int %matmul_1 {dim0 = 1, dim1 = 2} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
    %contiguous = aten.contiguous %transpose_4 : (tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32>
    %reshape_2 = aten.reshape %contiguous {shape = [1, 8, -1]} : (tensor<1x8x4x16xf32>) -> tensor<1x8x64xf32>
    %linear_3 = aten.linear %reshape_2, %p_hf_model_layers_0_self_attn_o_proj_weight, none : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
    %add_7 = aten.add.Tensor %to_6, %linear_3 : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %add_7 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_9 = aten.to.dtype %add_7 {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %pow_1 = aten.pow.Tensor_Scalar %to_9 {exponent = 2} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mean_1 = aten.mean.dim %pow_1 {dim = [-1], keepdim = true} : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    %add_8 = aten.add.Scalar %mean_1 {other = 1.0e-06} : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %rsqrt_1 = aten.rsqrt %add_8 : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %mul_10 = aten.mul.Tensor %to_9, %rsqrt_1 : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %mul_10 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_10 = aten.to.dtype %mul_10 {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mul_11 = aten.mul.Tensor %p_hf_model_layers_0_post_attention_layernorm_weight, %to_10 : (tensor<64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %linear_4 = aten.linear %mul_11, %p_hf_model_layers_0_mlp_gate_proj_weight, none : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
    %silu = aten.silu %linear_4 : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %linear_5 = aten.linear %mul_11, %p_hf_model_layers_0_mlp_up_proj_weight, none : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
    %mul_12 = aten.mul.Tensor %silu, %linear_5 : (tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
    %linear_6 = aten.linear %mul_12, %p_hf_model_layers_0_mlp_down_proj_weight, none : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
    %add_9 = aten.add.Tensor %to_9, %linear_6 : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %add_9 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_11 = aten.to.dtype %add_9 {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %pow_2 = aten.pow.Tensor_Scalar %to_11 {exponent = 2} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mean_2 = aten.mean.dim %pow_2 {dim = [-1], keepdim = true} : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
    %add_10 = aten.add.Scalar %mean_2 {other = 1.0e-06} : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %rsqrt_2 = aten.rsqrt %add_10 : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
    %mul_13 = aten.mul.Tensor %to_11, %rsqrt_2 : (tensor<1x8x64xf32>, tensor<1x8x1xf32>) -> tensor<1x8x64xf32>
    aten._assert_tensor_metadata %mul_13 {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x8x64xf32>) -> ()
    %to_12 = aten.to.dtype %mul_13 {dtype = f32} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %mul_14 = aten.mul.Tensor %p_hf_model_norm_weight, %to_12 : (tensor<64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %alias = aten.alias %mul_14 : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %linear_7 = aten.linear %alias, %p_hf_lm_head_weight, none : (tensor<1x8x64xf32>, tensor<512x64xf32>) -> tensor<1x8x512xf32>
    func.return %linear_7 : tensor<1x8x512xf32>
  }
}