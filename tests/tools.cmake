# The optional GPU tools are never built or run here (no GPU, no PyTorch),
# but their scripts must parse: Python's own parser on measure.py, bash -n
# on the device script. Skipped (77) without python3.
add_test(NAME tools/measure_parses
  COMMAND bash -c "command -v python3 >/dev/null || exit 77; python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' \"$0\""
          ${CMAKE_SOURCE_DIR}/tools/measure/measure.py)
set_tests_properties(tools/measure_parses PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME tools/device_measure_parses COMMAND bash -n ${CMAKE_SOURCE_DIR}/tools/device_measure.sh)
# measure.py's arguments are read before PyTorch is imported: a bad GEMM shape
# list is refused with argparse's exit 2 and the shape named.
add_test(NAME tools/measure_bad_shapes
  COMMAND bash -c "command -v python3 >/dev/null || exit 77; python3 \"$0\" kernels --parts C --shapes 16384x2048x131072,12x3 2>&1; echo exit=$?"
          ${CMAKE_SOURCE_DIR}/tools/measure/measure.py)
set_tests_properties(tools/measure_bad_shapes PROPERTIES SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "argument --shapes: '12x3' is not MxNxK, e.g. 8192x7168x8192[\r\n]+exit=2")
