# One static library per layer, built from every source file in src/<layer>/ and its folders
# of one concept (src/data/jinja/, src/cli/bench/) and, when the build has CUDA,
# src/<layer>/gpu/ (*.cpp host code and *.cu kernels). Adding a file to a layer needs no CMake
# edit.

function(autotrain_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
      -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough>)
  # GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string at -O3 (GCC bug
  # 105329); they are not in our code and cannot be fixed there.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
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

function(autotrain_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp
       ${PROJECT_SOURCE_DIR}/src/${name}/*/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/src/${name}/gpu/")
  if(AUTOTRAIN_HAVE_CUDA)
    file(GLOB gpu_host_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/gpu/*.cpp)
    list(APPEND sources ${gpu_host_sources})
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/gpu/*.cu)
    if(AUTOTRAIN_CUDA_EMULATED)
      foreach(cu IN LISTS cuda_sources)
        autotrain_emulated_cuda_source(${name} ${cu} emulated)
        list(APPEND sources ${emulated})
      endforeach()
    else()
      list(APPEND sources ${cuda_sources})
    endif()
  endif()
  set(target autotrain_${name})
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    target_compile_definitions(${target} PRIVATE
      AUTOTRAIN_SOURCE_DIR="${PROJECT_SOURCE_DIR}" AUTOTRAIN_VERSION="${PROJECT_VERSION}")
    autotrain_warnings(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
endfunction()
