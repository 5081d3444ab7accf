# AUTOTRAIN_CUDA=emulate: the GPU path (src/<layer>/gpu/: its .cu kernels and host code) built with
# the host compiler and linked against the CUDA emulator in tests/cuda_emu instead of the CUDA
# runtime, cuBLAS and NCCL. Only the toolkit's headers are needed, not nvcc or a GPU. The .cu
# files and the .cuh headers they include go through tests/cuda_emu/translate.py (kernel launches
# become emulator calls) and are compiled with tests/cuda_emu/prelude.hpp force-included. See docs/gpu.md.
#
# AUTOTRAIN_CUDA=emulate-if-found (the ci preset) is emulate where the toolkit's headers are found,
# and a build without CUDA elsewhere. Its emulator reports no device unless
# AUTOTRAIN_CUDA_EMU_DEVICES asks for some, so the build's binaries behave under ctest as on a
# machine without a GPU, and the GPU tests (label cuda_emu, tests/cuda_emu/CMakeLists.txt) set it
# and run in the same build. (The emulate preset's emulator reports eight by default.)
#
# Where nvcc and the toolkit's libraries are found too, the same build also compiles every .cu
# file with nvcc and links `autotrain_cuda` (build/<preset>/cuda/autotrain): the host code's
# objects are shared, only the kernels and the CUDA libraries differ. A target with the property
# AUTOTRAIN_REAL_CUDA links the nvcc-compiled kernels and the real CUDA runtime, cuBLAS and NCCL;
# every other target the emulated ones. Not in `all`: the test cuda.nvcc_build builds it.
find_path(AUTOTRAIN_CUDA_INCLUDE cuda_runtime_api.h
  HINTS ${CUDAToolkit_ROOT}/include /usr/local/cuda/include)
find_path(AUTOTRAIN_NCCL_INCLUDE nccl.h HINTS ${AUTOTRAIN_CUDA_INCLUDE} /usr/local/cuda/include)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
if((NOT AUTOTRAIN_CUDA_INCLUDE OR NOT AUTOTRAIN_NCCL_INCLUDE) AND
   AUTOTRAIN_CUDA STREQUAL "emulate-if-found")
  message(STATUS "AUTOTRAIN_CUDA=emulate-if-found: no CUDA headers (cuda_runtime_api.h, nccl.h), "
                 "so a build without CUDA")
  return()
endif()
if(NOT AUTOTRAIN_CUDA_INCLUDE OR NOT AUTOTRAIN_NCCL_INCLUDE)
  message(FATAL_ERROR "AUTOTRAIN_CUDA=emulate needs the CUDA toolkit's headers and nccl.h "
                      "(set CUDAToolkit_ROOT); found '${AUTOTRAIN_CUDA_INCLUDE}' and "
                      "'${AUTOTRAIN_NCCL_INCLUDE}'")
endif()

set(AUTOTRAIN_HAVE_CUDA ON)
set(AUTOTRAIN_HAVE_NCCL ON)
set(AUTOTRAIN_CUDA_EMULATED ON)
set(AUTOTRAIN_CUDA_EMU_DIR ${PROJECT_SOURCE_DIR}/tests/cuda_emu)

file(GLOB cuda_emu_sources CONFIGURE_DEPENDS ${AUTOTRAIN_CUDA_EMU_DIR}/*.cpp)
add_library(autotrain_cuda_emu STATIC ${cuda_emu_sources})
target_include_directories(autotrain_cuda_emu SYSTEM PUBLIC ${AUTOTRAIN_CUDA_INCLUDE}
                                                             ${AUTOTRAIN_NCCL_INCLUDE})
target_link_libraries(autotrain_cuda_emu PUBLIC MPI::MPI_CXX)
# The devices it reports where AUTOTRAIN_CUDA_EMU_DEVICES is unset: a node of eight in the emulate
# preset's build, none in emulate-if-found's (the ci preset's, where ctest runs everything).
if(AUTOTRAIN_CUDA STREQUAL "emulate")
  target_compile_definitions(autotrain_cuda_emu PRIVATE AUTOTRAIN_CUDA_EMU_DEFAULT_DEVICES=8)
else()
  target_compile_definitions(autotrain_cuda_emu PRIVATE AUTOTRAIN_CUDA_EMU_DEFAULT_DEVICES=0)
endif()

autotrain_find_cuda_toolkit()
set(AUTOTRAIN_CUDA_REAL_TOO OFF)
if(AUTOTRAIN_CUDA_TOOLKIT_FOUND AND AUTOTRAIN_NCCL_LIB)
  set(AUTOTRAIN_CUDA_REAL_TOO ON)
endif()
# Whether the target being built or linked is a real-CUDA one.
set(real "$<BOOL:$<TARGET_PROPERTY:AUTOTRAIN_REAL_CUDA>>")
target_compile_definitions(autotrain_cuda_runtime INTERFACE AUTOTRAIN_HAVE_CUDA=1
                                                            $<$<NOT:${real}>:AUTOTRAIN_CUDA_EMULATED=1>)
target_compile_definitions(autotrain_nccl INTERFACE AUTOTRAIN_HAVE_NCCL=1)
target_include_directories(autotrain_nccl SYSTEM INTERFACE ${AUTOTRAIN_NCCL_INCLUDE})
target_link_libraries(autotrain_nccl INTERFACE autotrain_cuda_runtime)
if(AUTOTRAIN_CUDA_REAL_TOO)
  target_link_libraries(autotrain_cuda_runtime INTERFACE $<IF:${real},CUDA::cudart,autotrain_cuda_emu>)
  target_link_libraries(autotrain_cublas INTERFACE $<${real}:CUDA::cublasLt> $<${real}:CUDA::cublas>
                                                   $<$<NOT:${real}>:autotrain_cuda_emu>)
  target_link_libraries(autotrain_nccl INTERFACE $<${real}:${AUTOTRAIN_NCCL_LIB}>)
  # cuDNN for the real-CUDA targets only: the emulated kernels run our own attention.
  autotrain_find_cudnn()
  if(AUTOTRAIN_CUDNN_FOUND)
    target_include_directories(autotrain_cudnn SYSTEM INTERFACE
                               $<${real}:${AUTOTRAIN_CUDNN_INCLUDE}>)
    target_link_libraries(autotrain_cudnn INTERFACE $<${real}:${AUTOTRAIN_CUDNN_LIB}>)
    target_compile_definitions(autotrain_cudnn INTERFACE $<${real}:AUTOTRAIN_HAVE_CUDNN=1>)
  endif()
else()
  target_link_libraries(autotrain_cuda_runtime INTERFACE autotrain_cuda_emu)
  target_link_libraries(autotrain_cublas INTERFACE autotrain_cuda_emu)
endif()
unset(real)

# The C++ file that stands for one .cu file, or one .cuh header, of a layer in the emulated build.
# A header's translation keeps its name and sits next to the translated .cu files, so that their
# #include "x.cuh" finds it before the original in the source folder.
function(autotrain_emulated_cuda_source layer cu_file out_var)
  get_filename_component(name ${cu_file} NAME_WE)
  get_filename_component(extension ${cu_file} LAST_EXT)
  set(out ${CMAKE_BINARY_DIR}/cuda_emu/${layer}/${name}.cpp)
  if(extension STREQUAL ".cuh")
    set(out ${CMAKE_BINARY_DIR}/cuda_emu/${layer}/${name}.cuh)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${Python3_EXECUTABLE} ${AUTOTRAIN_CUDA_EMU_DIR}/translate.py ${cu_file} ${out}
    DEPENDS ${cu_file} ${AUTOTRAIN_CUDA_EMU_DIR}/translate.py
    COMMENT "cuda-emu: translating ${layer}/gpu/${name}${extension}")
  set(${out_var} ${out} PARENT_SCOPE)
  if(extension STREQUAL ".cuh")
    set_source_files_properties(${out} PROPERTIES HEADER_FILE_ONLY ON)
    return()
  endif()
  get_filename_component(cu_dir ${cu_file} DIRECTORY)
  # The class-in-anonymous-namespace check sees the #line'd .cu name as a header: not ours.
  set_source_files_properties(${out} PROPERTIES
    INCLUDE_DIRECTORIES ${cu_dir}
    COMPILE_OPTIONS "-include;${AUTOTRAIN_CUDA_EMU_DIR}/prelude.hpp;-Wno-subobject-linkage;-Wno-unknown-pragmas")
endfunction()
