# `cmake --install` into a temporary prefix, then use the installed tree.
add_test(NAME install/prefix COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/run.sh ${CMAKE_BINARY_DIR})
