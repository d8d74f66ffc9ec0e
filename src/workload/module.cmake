# Chakra: compile our et_def.proto with protoc-c into the build tree.
if(NOT PROTOC_C OR NOT PROTOBUFC_FOUND)
  message(FATAL_ERROR "protoc-c and libprotobuf-c are needed for Chakra traces (run 'make deps')")
endif()
set(_wl_gen ${CMAKE_BINARY_DIR}/gen/workload)
file(MAKE_DIRECTORY ${_wl_gen})
add_custom_command(
  OUTPUT ${_wl_gen}/et_def.pb-c.c ${_wl_gen}/et_def.pb-c.h
  COMMAND ${PROTOC_C} --c_out=${_wl_gen} --proto_path=${CMAKE_SOURCE_DIR}/src/workload
          ${CMAKE_SOURCE_DIR}/src/workload/et_def.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/src/workload/et_def.proto
  COMMENT "protoc-c: Chakra et_def.proto")
list(APPEND TS_LIB_SOURCES ${_wl_gen}/et_def.pb-c.c)
list(APPEND TS_LIB_INCLUDES ${_wl_gen})
list(APPEND TS_LIB_LIBS PkgConfig::PROTOBUFC)
# generated code is not held to our warning flags
set_source_files_properties(${_wl_gen}/et_def.pb-c.c PROPERTIES COMPILE_OPTIONS "-Wno-error;-Wno-conversion")
