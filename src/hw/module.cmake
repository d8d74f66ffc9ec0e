# hw: no generated sources; pulls in the optional CUDA calibrator.
include(${CMAKE_SOURCE_DIR}/tools/calibrate/calibrate.cmake)
