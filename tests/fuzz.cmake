# Fuzzing (owned by the hardening work; see docs/robustness.md).
#
# Two modes:
#  * TS_FUZZ=ON (a separate clang build, build-fuzz/): every tests/fuzz/fuzz_*.c
#    becomes a libFuzzer binary built with -fsanitize=fuzzer,address,undefined
#    against the library sources compiled with -fsanitize=fuzzer-no-link,...
#    fuzz_cli also gets the CLI sources, main() renamed to ts_cli_main
#    (tests/fuzz/fuzz_cli.c includes src/cli/main.c under a #define).
#    Target `fuzz_all` builds them all. `make fuzz FUZZ_SECONDS=N` runs them.
#  * the normal gcc build: one ctest `fuzz/<target>` per harness that calls
#    tests/fuzz/smoke.sh, which configures/builds build-fuzz with clang once
#    (cached, serialized with flock) and runs the target for a few seconds
#    over its seed corpus. Skipped (exit 77) when clang or libFuzzer is
#    missing, and not registered in the sanitizer build (the fuzzers are
#    sanitized already; running them twice would only double the time).

file(GLOB TS_FUZZ_HARNESSES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)

if(TS_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TS_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
  endif()
  set(TS_FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=all
      -fno-omit-frame-pointer -g)
  # Warnings stay on but are not errors here: the gcc build enforces them, and
  # a clang-only warning must not stop a fuzzing run.
  set(TS_FUZZ_WARN -Wall -Wextra -Wno-error)

  add_library(trainsim_fuzzlib STATIC ${TS_LIB_SOURCES})
  target_include_directories(trainsim_fuzzlib PUBLIC ${CMAKE_SOURCE_DIR}/include ${TS_LIB_INCLUDES})
  target_compile_options(trainsim_fuzzlib PRIVATE ${TS_FUZZ_WARN} -fsanitize=fuzzer-no-link ${TS_FUZZ_SAN})
  target_link_libraries(trainsim_fuzzlib PUBLIC ${TS_LIB_LIBS})
  target_compile_definitions(trainsim_fuzzlib PRIVATE
    TS_SOURCE_DATA_DIR="${CMAKE_SOURCE_DIR}/data"
    TS_INSTALL_DATA_DIR="${CMAKE_INSTALL_FULL_DATADIR}/trainsim")

  add_custom_target(fuzz_all)
  foreach(h ${TS_FUZZ_HARNESSES})
    get_filename_component(name ${h} NAME_WE)
    set(srcs ${h})
    if(name STREQUAL "fuzz_cli")
      # fuzz_cli.c includes src/cli/main.c itself, with main renamed.
      set(cli_srcs ${TS_CLI_SOURCES})
      list(FILTER cli_srcs EXCLUDE REGEX "/src/cli/main\\.c$")
      list(APPEND srcs ${cli_srcs})
    elseif(name STREQUAL "fuzz_gpu_rows")
      # fuzz_gpu_rows.c includes bench/gpu_accuracy.c itself, with main renamed.
      set_source_files_properties(${h} PROPERTIES COMPILE_DEFINITIONS TS_BENCH_DIR="${CMAKE_SOURCE_DIR}/bench")
    elseif(name STREQUAL "fuzz_runs_csv")
      # build/accuracy's runs-file reader lives beside it in bench/.
      list(APPEND srcs ${CMAKE_SOURCE_DIR}/bench/runs_csv.c)
    endif()
    add_executable(${name} ${srcs})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src/cli ${CMAKE_SOURCE_DIR}/tests/fuzz
      ${CMAKE_SOURCE_DIR}/bench)
    target_compile_options(${name} PRIVATE ${TS_FUZZ_WARN} -fsanitize=fuzzer ${TS_FUZZ_SAN})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer ${TS_FUZZ_SAN})
    target_link_libraries(${name} PRIVATE trainsim_fuzzlib ${TS_CLI_LIBS})
    add_dependencies(fuzz_all ${name})
  endforeach()
elseif(NOT TS_SANITIZE)
  set(TS_FUZZ_SMOKE_SECONDS 2 CACHE STRING "seconds each fuzz target runs in ctest")
  foreach(h ${TS_FUZZ_HARNESSES})
    get_filename_component(name ${h} NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" target ${name})
    add_test(NAME fuzz/${target}
      COMMAND bash ${CMAKE_SOURCE_DIR}/tests/fuzz/smoke.sh ${target} ${TS_FUZZ_SMOKE_SECONDS})
    set_tests_properties(fuzz/${target} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
      ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
  endforeach()
endif()
