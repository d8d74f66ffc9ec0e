# bench/gpu_accuracy: the compute model against measurements of real GPUs
# (measurements.jsonl rows). A program, not a test: it prints figures
# (STYLE.md 16).
add_executable(gpu_accuracy ${CMAKE_SOURCE_DIR}/bench/gpu_accuracy.c)
target_compile_options(gpu_accuracy PRIVATE ${TS_WARNINGS})
target_link_libraries(gpu_accuracy PRIVATE trainsim_static PkgConfig::JANSSON m)
target_compile_definitions(gpu_accuracy PRIVATE TS_BENCH_DIR="${CMAKE_SOURCE_DIR}/bench")
# its bad inputs: rows it cannot score named by file and line (exit 1, no
# table), an unknown option with the usage (exit 2)
add_test(NAME gpu_accuracy/bad_rows
  COMMAND bash -c "cd \"$1\" && out=$(\"$0\" rows_bad.jsonl 2>&1 >/dev/null); rc=$?; [ $rc = 1 ] && [ \"$out\" = \"$(cat rows_bad.stderr)\" ]"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
add_test(NAME gpu_accuracy/bad_option
  COMMAND bash -c "out=$(\"$0\" --rows x 2>&1 >/dev/null); rc=$?; [ $rc = 2 ] && [ \"$out\" = \"$(cat \"$1\")\" ]"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy/bad_option.stderr)
# gpu_accuracy_golden(NAME [FLAGS...]): gpu_accuracy FLAGS on
# tests/gpu_accuracy/NAME.jsonl, its stdout exactly NAME.stdout
function(gpu_accuracy_golden name)
  string(JOIN " " flags ${ARGN})
  add_test(NAME gpu_accuracy/${name}
    COMMAND bash -c "cd \"$1\" && diff -u ${name}.stdout <(\"$0\" ${flags} ${name}.jsonl)"
            $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
  set_tests_properties(gpu_accuracy/${name} PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
endfunction()
# -k on a profiled step (tools/measure step --profile): every kernel as
# trainsim costs it, the optimizer, and the step's GPU time by kind measured
# beside predicted (tests/gpu_accuracy/profile_row.stdout, exact)
gpu_accuracy_golden(profile_row -k)
# D-attn rows without and with dropout on the probabilities (measure.py attn
# --dropout): the latter scored apart, as attn+dropout (exact)
gpu_accuracy_golden(attn_dropout)
# part F rows of PyTorch's norm kernels at a narrow and a wide row, beside an
# add: the norms costed by hw_norm_time_s (model.eager_norm), the add by its
# bytes (-v, exact)
gpu_accuracy_golden(norm_rows -v)
# part B rows, a GELU and a SwiGLU shard: the GEMMs and the core from the
# layer template, the norm and the activation as the harness's eager
# PyTorch kernels (torch_norm_s, torch_act_s), op by op (-v, exact)
gpu_accuracy_golden(shard_rows -v)
# a shard row whose heads are narrower than hidden / heads (GPT-OSS: 64
# heads of 64 over hidden 2880; the row's head_dim) and a D-attn row on the
# flash kernel at head dim 64: the flash factor at that head dim
# (attn_fa2_factor_hd64), not the head-dim-128 one (-v, exact)
gpu_accuracy_golden(shard_head_dim -v)
# a whole HF step of a model with learned attention sinks (GPT-OSS-20B cut
# to 2 layers, H200): transformers has no SDPA path for it, so the eager
# attention's score ops are costed (template_hf.c eager_sink_attention; exact)
gpu_accuracy_golden(hf_sinks -v)
# D-attn-fe rows (tools/measure/sdpa_sink.cpp: cuDNN's fused attention
# through its frontend, an H200 at the clock each row records): causal
# without and with a learned sink (the sink's backward at
# attn_sink_bwd_ns_per_row a query row), and a 128-key window without and
# with one: the forward as the causal kernel over every key, masked
# (PART_CUDNN_SWA_FWD; the sink's row is one of the runs where cuDNN skipped
# the tiles after all), the backward over whole key tiles (part_swa_keys)
# (-v, exact)
gpu_accuracy_golden(attn_fe -v)
# a step row with its forward timed under torch.no_grad() and recorded for
# autograd (measure.py from 2026-11-27m: fwd_grad_ms): both scored against
# the step's forward pass, whose host time is the no-grad one (-v, exact)
gpu_accuracy_golden(fwd_grad -v)
# a shard row timed back to back (measure.py shard --sustained, an H200):
# each op's SM clock beside it, the GEMMs and the core costed at it, scored
# as part B-b2b (-v, exact)
gpu_accuracy_golden(shard_sustained -v)
# shard rows timed in the layer's order (measure.py shard --in-layer, an
# H100 and an H200): tensor work costed at the clock the row records,
# scored as part B-layer, and at the preset's one-GPU clock as
# B-layer@1gpu (-v, exact)
gpu_accuracy_golden(shard_in_layer -v)
# a step row whose harness counted other parameters than trainsim (here
# without the word table): both counts shown under the row (exact)
gpu_accuracy_golden(params_row)
# a step row whose model is neither a preset nor a shared config: its
# HuggingFace config beside the measurements file (beside/my-llama.json, as
# ../shared/validation/gpu lays them out) builds it (exact)
add_test(NAME gpu_accuracy/config_beside
  COMMAND bash -c "cd \"$1\" && diff -u beside/measurements.stdout <(\"$0\" beside/measurements.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/config_beside PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# -k on an eager-attention step (GPT-OSS's sinks): its products are bmm GEMMs
# and its softmax other kernels on both sides, each kernel by its own kind
gpu_accuracy_golden(eager_attn_kinds -k)
# a shard in the layer's order scored with a version 3 calibration (-c): the
# bf16 GEMM entries of data/calibrations/h100-sxm5-80gb_2026-11-28.json, read
# against the preset's units (model.calib_reference_us) (-v, exact)
gpu_accuracy_golden(calib_v3 -v -c calib_v3.json)
# rows naming their model as the Hub spells it ("meta-llama/Llama-3.2-1B",
# "Qwen/Qwen3-30B-A3B_L2"): the config or preset whose letters and digits
# match, scored as the rows that name it as the configs do (-v, exact)
gpu_accuracy_golden(respelt_names -v)
