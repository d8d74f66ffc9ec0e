# bench/gpu_accuracy: the compute model against measurements of real GPUs
# (measurements.jsonl rows). A program, not a test: it prints figures
# (STYLE.md 16).
add_executable(gpu_accuracy ${CMAKE_SOURCE_DIR}/bench/gpu_accuracy.c)
target_compile_options(gpu_accuracy PRIVATE ${TS_WARNINGS})
target_link_libraries(gpu_accuracy PRIVATE trainsim_static PkgConfig::JANSSON m)
target_compile_definitions(gpu_accuracy PRIVATE TS_BENCH_DIR="${CMAKE_SOURCE_DIR}/bench")
