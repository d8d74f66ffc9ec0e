# The optional GPU tools are never built or run here (no GPU, no PyTorch),
# but their scripts must parse: Python's own parser on measure.py, bash -n
# on the device script. Skipped (77) without python3.
add_test(NAME tools/measure_parses
  COMMAND bash -c "command -v python3 >/dev/null || exit 77; python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' \"$0\""
          ${CMAKE_SOURCE_DIR}/tools/measure/measure.py)
set_tests_properties(tools/measure_parses PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME tools/device_measure_parses COMMAND bash -n ${CMAKE_SOURCE_DIR}/tools/device_measure.sh)
