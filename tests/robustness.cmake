# test_robustness: every heap allocation made by trainsim code in this test
# goes through the test's failure-injecting wrappers (see the file's header).
if(TARGET test_robustness)
  target_link_options(test_robustness PRIVATE
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup)
  target_link_libraries(test_robustness PRIVATE PkgConfig::JANSSON)
endif()

# The whole suite under valgrind memcheck (scripts/valgrind.sh): every golden
# case and unit test, --leak-check=full, errors and leaks fail. It takes 1 to
# 3.5 minutes with 2 jobs (167 cases) depending on load, beyond the ~60 s a
# ctest may take, so it is `make valgrind`; -DTS_VALGRIND_TEST=ON adds it to ctest. Not in the
# sanitizer build: ASan and valgrind do not mix.
option(TS_VALGRIND_TEST "Run the suite under valgrind as a ctest (1-3.5 min: off by default; make valgrind)" OFF)
find_program(TS_VALGRIND valgrind)
if(TS_VALGRIND_TEST AND TS_VALGRIND AND NOT TS_SANITIZE AND NOT TS_FUZZ)
  add_test(NAME valgrind/suite
    COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/valgrind.sh ${CMAKE_BINARY_DIR} 2)
  set_tests_properties(valgrind/suite PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()

# Output safety at the CLI level: missing directories, directories as
# outputs, failing commands, kill -9 mid-write, half-written Chakra sets.
add_test(NAME robust/cli_output
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/robust_cli.sh $<TARGET_FILE:trainsim>)
set_tests_properties(robust/cli_output PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
