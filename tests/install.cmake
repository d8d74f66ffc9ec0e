# `cmake --install` into a temporary prefix, then use the installed tree.
# Not in the sanitizer build: a plain program cannot link an ASan library.
if(NOT TS_SANITIZE)
  add_test(NAME install/prefix COMMAND bash ${CMAKE_SOURCE_DIR}/tests/install/run.sh ${CMAKE_BINARY_DIR})
endif()
