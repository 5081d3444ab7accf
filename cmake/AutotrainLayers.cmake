# One static library per layer, built from every source file in src/<layer>/ and its folders
# of one concept (src/data/jinja/, src/cli/bench/) and, when the build has CUDA,
# src/<layer>/gpu/ (*.cpp host code and *.cu kernels; in the emulated build the kernels are a
# library of their own, autotrain_<layer>_cuda_emulated, and, where nvcc is found,
# autotrain_<layer>_cuda_nvcc for the real-CUDA targets). Adding a file to a layer needs no CMake
# edit.

function(autotrain_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough>)
  # GCC 12 reports false -Wrestrict, -Wstringop-overflow and -Warray-bounds positives inside
  # libstdc++'s std::string at -O3 (GCC bugs 105329, 105651, 106199); they are not in our code
  # and cannot be fixed there, and which files meet them changes with inlining (unity builds
  # change it). Bounds stay checked by clang's warnings in the fuzz build and by the
  # sanitizers there and in the asan preset.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict -Wno-stringop-overflow -Wno-array-bounds>)
  endif()
  if(AUTOTRAIN_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  # nvcc: host-compiler warnings for the .cu files, and nvcc's own warnings as errors.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(AUTOTRAIN_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
  if(AUTOTRAIN_NATIVE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()
endfunction()

# The layer libraries and the test binaries compile as unity builds (batches of 8 of a target's
# files in one translation unit): each file's compile was mostly the same headers parsed and the
# same templates instantiated and optimised again, so a batch takes about a third of its files'
# time alone (docs/benchmarks.md, "Tests and their cost"). Files of a layer share their anonymous
# namespaces in a batch, so two files may not define the same name there (a test file's code sits
# in a namespace named after the file: cmake/AutotrainTesting.cmake). Files with options of their
# own compile alone (CMake leaves them out of the batches). -DAUTOTRAIN_UNITY_BUILD=OFF compiles
# file by file, which also checks that each file includes what it uses.
option(AUTOTRAIN_UNITY_BUILD "Compile the layer libraries and the tests as unity builds" ON)

# autotrain_unity(TARGET): TARGET compiles as a unity build where AUTOTRAIN_UNITY_BUILD is on.
function(autotrain_unity target)
  if(NOT AUTOTRAIN_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  # A type of a file's anonymous namespace inside a template is no error once that file is
  # included by the batch's file instead of compiled itself.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
  endif()
endfunction()

function(autotrain_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  set(target autotrain_${name})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp
       ${PROJECT_SOURCE_DIR}/src/${name}/*/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/src/${name}/gpu/")
  set(kernel_libraries)
  if(AUTOTRAIN_HAVE_CUDA)
    file(GLOB gpu_host_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/gpu/*.cpp)
    list(APPEND sources ${gpu_host_sources})
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/gpu/*.cu)
    if(AUTOTRAIN_CUDA_EMULATED AND cuda_sources)
      # The kernels in a library of their own, so that the real-CUDA targets can link the nvcc
      # build of the same .cu files instead (cmake/AutotrainCudaEmulation.cmake). Its sources
      # list the translated .cuh headers too, so that they are written before anything compiles.
      file(GLOB cuda_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/gpu/*.cuh)
      set(emulated_sources)
      foreach(cu IN LISTS cuda_headers cuda_sources)
        autotrain_emulated_cuda_source(${name} ${cu} emulated)
        list(APPEND emulated_sources ${emulated})
      endforeach()
      add_library(${target}_cuda_emulated STATIC ${emulated_sources})
      autotrain_layer_kernels(${target}_cuda_emulated "${ARG_DEPS}")
      if(AUTOTRAIN_CUDA_REAL_TOO)
        add_library(${target}_cuda_nvcc STATIC EXCLUDE_FROM_ALL ${cuda_sources})
        set_target_properties(${target}_cuda_nvcc PROPERTIES AUTOTRAIN_REAL_CUDA ON)
        autotrain_layer_kernels(${target}_cuda_nvcc "${ARG_DEPS}")
        set(kernel_libraries
          $<IF:$<BOOL:$<TARGET_PROPERTY:AUTOTRAIN_REAL_CUDA>>,${target}_cuda_nvcc,${target}_cuda_emulated>)
      else()
        set(kernel_libraries ${target}_cuda_emulated)
      endif()
    else()
      list(APPEND sources ${cuda_sources})
    endif()
  endif()
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} ${kernel_libraries})
    target_compile_definitions(${target} PRIVATE
      AUTOTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}" AUTOTRAIN_VERSION="${PROJECT_VERSION}")
    autotrain_warnings(${target})
    autotrain_unity(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS} ${kernel_libraries})
  endif()
endfunction()

# A layer's kernels library (its gpu/*.cu, emulated or compiled by nvcc): built as the layer's
# own sources are.
function(autotrain_layer_kernels target deps)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${target} PUBLIC ${deps})
  target_compile_definitions(${target} PRIVATE
    AUTOTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}" AUTOTRAIN_VERSION="${PROJECT_VERSION}")
  autotrain_warnings(${target})
endfunction()
