# The CUDA calibrator (tools/calibrate/calibrate.cu), built only when nvcc and
# cuBLAS headers are found and TS_WITH_CUDA_TOOLS is ON. Invoked through nvcc
# directly (no CUDA language in the project), so a machine without CUDA
# configures and tests exactly the same. Target: `calibrate` (in the default
# build when available); run it on a GPU machine:
#   build/calibrate --out calibration.json && trainsim ... --calibration calibration.json
if(TS_WITH_CUDA_TOOLS)
  find_program(TS_NVCC nvcc HINTS /usr/local/cuda/bin $ENV{CUDA_HOME}/bin)
  if(TS_NVCC)
    get_filename_component(_ts_cuda_bin ${TS_NVCC} DIRECTORY)
    get_filename_component(_ts_cuda_root ${_ts_cuda_bin} DIRECTORY)
    find_file(TS_CUBLAS_H cublas_v2.h HINTS ${_ts_cuda_root}/include ${_ts_cuda_root}/targets/x86_64-linux/include)
  endif()
  if(TS_NVCC AND TS_CUBLAS_H)
    set(_ts_cal_src ${CMAKE_SOURCE_DIR}/tools/calibrate/calibrate.cu)
    set(_ts_cal_bin ${CMAKE_BINARY_DIR}/calibrate)
    add_custom_command(OUTPUT ${_ts_cal_bin}
      COMMAND ${TS_NVCC} -std=c++17 -O2 -o ${_ts_cal_bin} ${_ts_cal_src} -lcublas
      DEPENDS ${_ts_cal_src}
      COMMENT "nvcc: building tools/calibrate (CUDA + cuBLAS)")
    add_custom_target(calibrate ALL DEPENDS ${_ts_cal_bin})
    message(STATUS "trainsim: CUDA calibrator will be built with ${TS_NVCC}")
  else()
    message(STATUS "trainsim: nvcc/cuBLAS not found, tools/calibrate is skipped")
  endif()
endif()
