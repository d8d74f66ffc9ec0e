# search: distributed sweeps with MPI when OpenMPI (or any MPI) is found.
# Only then is src/search/mpi/search_mpi.c compiled and TS_HAVE_MPI defined
# (for the library, the CLI, tests and benchmarks); without MPI the build is
# exactly the same as before this fragment.
if(TS_WITH_MPI)
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    list(APPEND TS_LIB_SOURCES ${CMAKE_SOURCE_DIR}/src/search/mpi/search_mpi.c)
    list(APPEND TS_LIB_LIBS MPI::MPI_C)
    add_compile_definitions(TS_HAVE_MPI=1)
    set(TS_HAVE_MPI ON)
    message(STATUS "trainsim: distributed sweeps with MPI ${MPI_C_VERSION}")
  else()
    message(STATUS "trainsim: MPI not found, sweeps use threads only")
  endif()
endif()
