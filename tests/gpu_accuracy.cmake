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
# -k on a profiled step (tools/measure step --profile): every kernel as
# trainsim costs it, the optimizer, and the step's GPU time by kind measured
# beside predicted (tests/gpu_accuracy/profile_row.stdout, exact)
add_test(NAME gpu_accuracy/profile_row
  COMMAND bash -c "cd \"$1\" && diff -u profile_row.stdout <(\"$0\" -k profile_row.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/profile_row PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# D-attn rows without and with dropout on the probabilities (measure.py attn
# --dropout): the latter scored apart, as attn+dropout (exact)
add_test(NAME gpu_accuracy/attn_dropout
  COMMAND bash -c "cd \"$1\" && diff -u attn_dropout.stdout <(\"$0\" attn_dropout.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/attn_dropout PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# part F rows of PyTorch's norm kernels at a narrow and a wide row, beside an
# add: the norms costed by hw_norm_time_s (model.eager_norm), the add by its
# bytes (-v, exact)
add_test(NAME gpu_accuracy/norm_rows
  COMMAND bash -c "cd \"$1\" && diff -u norm_rows.stdout <(\"$0\" -v norm_rows.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/norm_rows PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# part B rows, a GELU and a SwiGLU shard: the GEMMs and the core from the
# layer template, the norm and the activation as the harness's eager
# PyTorch kernels (torch_norm_s, torch_act_s), op by op (-v, exact)
add_test(NAME gpu_accuracy/shard_rows
  COMMAND bash -c "cd \"$1\" && diff -u shard_rows.stdout <(\"$0\" -v shard_rows.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/shard_rows PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# a step row whose harness counted other parameters than trainsim (here
# without the word table): both counts shown under the row (exact)
add_test(NAME gpu_accuracy/params_row
  COMMAND bash -c "cd \"$1\" && diff -u params_row.stdout <(\"$0\" params_row.jsonl)"
          $<TARGET_FILE:gpu_accuracy> ${CMAKE_SOURCE_DIR}/tests/gpu_accuracy)
set_tests_properties(gpu_accuracy/params_row PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
