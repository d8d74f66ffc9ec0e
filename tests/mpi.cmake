# Distributed sweep test: `mpirun -np 2 trainsim sweep ...` must print
# exactly what `mpirun -np 1` prints (stdout is free of timings). Skipped
# (exit 77) when the build has no MPI or mpirun is missing.
find_program(TS_MPIRUN NAMES mpirun mpiexec)
if(TS_HAVE_MPI AND TS_MPIRUN)
  add_test(NAME mpi/sweep_np2_equals_np1
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/mpi/run.sh ${TS_MPIRUN} $<TARGET_FILE:trainsim>)
else()
  add_test(NAME mpi/sweep_np2_equals_np1 COMMAND sh -c
    "echo 'SKIPPED: built without MPI or mpirun not found (install libopenmpi-dev openmpi-bin)'; exit 77")
endif()
set_tests_properties(mpi/sweep_np2_equals_np1 PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data;ASAN_OPTIONS=detect_leaks=0;OMPI_MCA_btl=self,vader;OMPI_MCA_rmaps_base_oversubscribe=1")
