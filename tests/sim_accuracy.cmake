# bench/accuracy: predicted vs published training throughput (sim). A program,
# not a test: it prints figures (STYLE.md 16).
add_executable(accuracy ${CMAKE_SOURCE_DIR}/bench/accuracy.c)
target_compile_options(accuracy PRIVATE ${TS_WARNINGS})
target_link_libraries(accuracy PRIVATE trainsim_static)
target_compile_definitions(accuracy PRIVATE TS_BENCH_DIR="${CMAKE_SOURCE_DIR}/bench")
