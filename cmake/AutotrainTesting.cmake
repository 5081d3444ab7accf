# Test registration. For each layer:
#   tests/<layer>/*_test.cpp      -> one GoogleTest binary test_<layer>, tests discovered by ctest
#   tests/<layer>/*_mpi_test.cpp  -> one binary mpitest_<layer> (MPI-aware main), run by ctest
#                                    under mpirun with -np 1, 2, 3 and 4
# and the same for tests/<layer>/gpu/ (the GPU path's tests; they skip in a build without CUDA).
# Both compile as unity builds (autotrain_unity): a test file's code sits in a namespace named
# after the file (autotrain::<layer>::<file stem>, gpu_<stem> under gpu/), around its anonymous
# one, so that two files of a batch never define the same name.
find_package(GTest REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
include(GoogleTest)

execute_process(COMMAND id -u OUTPUT_VARIABLE AUTOTRAIN_UID OUTPUT_STRIP_TRAILING_WHITESPACE)
set(AUTOTRAIN_MPIRUN ${MPIEXEC_EXECUTABLE} --oversubscribe)
if(AUTOTRAIN_UID STREQUAL "0")
  list(APPEND AUTOTRAIN_MPIRUN --allow-run-as-root)
endif()
string(REPLACE ";" " " AUTOTRAIN_MPIRUN_STRING "${AUTOTRAIN_MPIRUN}")
set(AUTOTRAIN_MPI_TEST_SIZES 1 2 3 4 CACHE STRING "World sizes every MPI test runs with")

# autotrain_test_flags(TARGET): a test binary's own code compiles at -O1 in the optimised builds
# (the code under test is the layers', compiled as the release has it): half the compile time of
# -O3 for test files, which are mostly assertions and set-up (docs/benchmarks.md, "Tests and their
# cost").
function(autotrain_test_flags target)
  target_compile_options(${target} PRIVATE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release,RelWithDebInfo>>:-O1>)
endfunction()

function(autotrain_layer_tests layer)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  set(dir ${PROJECT_SOURCE_DIR}/tests/${layer})
  file(GLOB all_tests CONFIGURE_DEPENDS ${dir}/*_test.cpp ${dir}/gpu/*_test.cpp)
  file(GLOB mpi_tests CONFIGURE_DEPENDS ${dir}/*_mpi_test.cpp ${dir}/gpu/*_mpi_test.cpp)
  set(unit_tests ${all_tests})
  if(mpi_tests)
    list(REMOVE_ITEM unit_tests ${mpi_tests})
  endif()
  if(unit_tests)
    add_executable(test_${layer} ${unit_tests})
    target_link_libraries(test_${layer} PRIVATE autotrain_${layer} autotrain_testing GTest::gtest
                          GTest::gtest_main ${ARG_DEPS})
    autotrain_warnings(test_${layer})
    autotrain_test_flags(test_${layer})
    autotrain_unity(test_${layer})
    gtest_discover_tests(test_${layer} DISCOVERY_TIMEOUT 60
      PROPERTIES ENVIRONMENT "AUTOTRAIN_SOURCE_DIR=${PROJECT_SOURCE_DIR}" LABELS unit)
  endif()
  if(mpi_tests)
    add_executable(mpitest_${layer} ${mpi_tests})
    target_link_libraries(mpitest_${layer} PRIVATE autotrain_${layer} autotrain_testing
                          autotrain_mpi_gtest_main GTest::gtest ${ARG_DEPS})
    autotrain_warnings(mpitest_${layer})
    autotrain_test_flags(mpitest_${layer})
    autotrain_unity(mpitest_${layer})
    foreach(np IN LISTS AUTOTRAIN_MPI_TEST_SIZES)
      add_test(NAME mpi.${layer}.np${np}
               COMMAND ${AUTOTRAIN_MPIRUN} -np ${np} $<TARGET_FILE:mpitest_${layer}>)
      # PROCESSORS: what ctest -j counts a test as (docs/benchmarks.md, "Tests and their cost").
      set_tests_properties(mpi.${layer}.np${np} PROPERTIES TIMEOUT 300 LABELS mpi PROCESSORS ${np}
        ENVIRONMENT "AUTOTRAIN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
    endforeach()
  endif()
endfunction()
