# Resolves GLASSBOX_CUDA (AUTO|ON|OFF) into GLASSBOX_HAVE_CUDA, and finds the
# NVTX3 headers, which need no CUDA at all: a CPU-only build keeps its ranges.
string(TOUPPER "${GLASSBOX_CUDA}" _gb_cuda)
if(NOT _gb_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "GLASSBOX_CUDA='${GLASSBOX_CUDA}' is not accepted; use AUTO, ON or OFF")
endif()

set(GLASSBOX_HAVE_CUDA OFF)
if(NOT _gb_cuda STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  include(CheckLanguage)
  check_language(CUDA)
  find_library(GLASSBOX_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
  find_path(GLASSBOX_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER AND GLASSBOX_CUDNN_LIBRARY AND GLASSBOX_CUDNN_INCLUDE)
    set(GLASSBOX_HAVE_CUDA ON)
  elseif(_gb_cuda STREQUAL "ON")
    message(FATAL_ERROR "GLASSBOX_CUDA=ON but the CUDA toolkit, nvcc or cuDNN was not found "
      "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nvcc=${CMAKE_CUDA_COMPILER}, cudnn=${GLASSBOX_CUDNN_LIBRARY})")
  endif()
endif()

if(GLASSBOX_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_90 machine code plus compute_90 PTX, which later GPUs JIT-compile.
    set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
  endif()
  # CMake 3.25 knows no CUDA20 flags for nvcc 13; device code needs only C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
endif()

find_path(GLASSBOX_NVTX3_INCLUDE nvtx3/nvToolsExt.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
if(GLASSBOX_NVTX3_INCLUDE)
  set(GLASSBOX_HAVE_NVTX ON)
  # NVTX's counters extension (CUDA 13 ships it); older NVTX headers lack it.
  if(EXISTS "${GLASSBOX_NVTX3_INCLUDE}/nvtx3/nvToolsExtCounters.h")
    set(GLASSBOX_HAVE_NVTX_COUNTERS ON)
  else()
    set(GLASSBOX_HAVE_NVTX_COUNTERS OFF)
  endif()
else()
  set(GLASSBOX_HAVE_NVTX_COUNTERS OFF)
  set(GLASSBOX_HAVE_NVTX OFF)
endif()
