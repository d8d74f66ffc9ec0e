# The CUDA calibrator (tools/calibrate/calibrate.cu), built only when nvcc and
# cuBLAS headers are found and TS_WITH_CUDA_TOOLS is ON. Invoked through nvcc
# directly (no CUDA language in the project), so a machine without CUDA
# configures and tests exactly the same. The nvcc flags live in
# tools/calibrate/nvcc.flags (shared with tools/device_measure.sh). Target:
# `calibrate` (in the default build when available); run it on a GPU machine:
#   build/calibrate --out calibration.json && trainsim ... --calibration calibration.json
if(TS_WITH_CUDA_TOOLS)
  find_program(TS_NVCC nvcc HINTS /usr/local/cuda/bin $ENV{CUDA_HOME}/bin)
  if(TS_NVCC)
    get_filename_component(_ts_cuda_bin ${TS_NVCC} DIRECTORY)
    get_filename_component(_ts_cuda_root ${_ts_cuda_bin} DIRECTORY)
    find_file(TS_CUBLAS_H cublas_v2.h HINTS ${_ts_cuda_root}/include ${_ts_cuda_root}/targets/x86_64-linux/include)
    find_file(TS_CUBLASLT_H cublasLt.h HINTS ${_ts_cuda_root}/include ${_ts_cuda_root}/targets/x86_64-linux/include)
  endif()
  if(TS_NVCC AND TS_CUBLAS_H AND TS_CUBLASLT_H)
    set(_ts_cal_dir ${CMAKE_SOURCE_DIR}/tools/calibrate)
    set(_ts_cal_bin ${CMAKE_BINARY_DIR}/calibrate)
    file(STRINGS ${_ts_cal_dir}/nvcc.flags _ts_cal_lines REGEX "^[^#]")
    string(JOIN " " _ts_cal_flags ${_ts_cal_lines})
    separate_arguments(_ts_cal_flags UNIX_COMMAND "${_ts_cal_flags}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_ts_cal_dir}/nvcc.flags)
    add_custom_command(OUTPUT ${_ts_cal_bin}
      COMMAND ${TS_NVCC} ${_ts_cal_flags} -o ${_ts_cal_bin} ${_ts_cal_dir}/calibrate.cu -lcublasLt -lcublas -ldl
      DEPENDS ${_ts_cal_dir}/calibrate.cu ${_ts_cal_dir}/cuda_check.h ${_ts_cal_dir}/nvcc.flags
      COMMENT "nvcc: building tools/calibrate (CUDA + cuBLAS + cuBLASLt)")
    add_custom_target(calibrate ALL DEPENDS ${_ts_cal_bin})
    # sm_margin: a GEMM's time while other kernels hold k SMs (TE's userbuffers
    # set_sm_margin, NCCL's channels)
    add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/sm_margin
      COMMAND ${TS_NVCC} ${_ts_cal_flags} -o ${CMAKE_BINARY_DIR}/sm_margin ${_ts_cal_dir}/sm_margin.cu -lcublasLt -lcublas
      DEPENDS ${_ts_cal_dir}/sm_margin.cu ${_ts_cal_dir}/cuda_check.h ${_ts_cal_dir}/nvcc.flags
      COMMENT "nvcc: building tools/calibrate/sm_margin (CUDA + cuBLAS + cuBLASLt)")
    add_custom_target(sm_margin ALL DEPENDS ${CMAKE_BINARY_DIR}/sm_margin)
    message(STATUS "trainsim: CUDA calibrator will be built with ${TS_NVCC}")
  else()
    message(STATUS "trainsim: nvcc/cuBLAS/cuBLASLt not found, tools/calibrate is skipped")
  endif()
endif()
