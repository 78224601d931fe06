# Resolves GLASSBOX_TORCH (AUTO|ON|OFF) into GLASSBOX_HAVE_TORCH: glassbox_torch
# (pytorch/) needs the CUDA backend, the exporters, a PyTorch with CUDA whose
# at::setHostAllocator takes a priority (2.11+), and Python's headers.
# AUTO skips it with a message when any is missing (CI: no PyTorch); ON fails.
# Give Torch_DIR and Python3_INCLUDE_DIR for a PyTorch outside the default
# paths (ARCHITECTURE.md, "glassbox_torch").
set(GLASSBOX_HAVE_TORCH OFF)

function(glassbox_torch_missing why)
  if(GLASSBOX_TORCH STREQUAL "ON")
    message(FATAL_ERROR "GLASSBOX_TORCH=ON: ${why}")
  endif()
  message(STATUS "glassbox_torch skipped: ${why}")
endfunction()

function(glassbox_find_torch)
  if(NOT GLASSBOX_HAVE_CUDA OR NOT GLASSBOX_BUILD_EXPORTERS)
    glassbox_torch_missing("needs the CUDA backend and the exporters")
    return()
  endif()
  find_package(Torch CONFIG QUIET)
  if(NOT Torch_FOUND)
    glassbox_torch_missing("no PyTorch found (find_package(Torch); set Torch_DIR)")
    return()
  endif()
  set(header "${TORCH_INSTALL_PREFIX}/include/ATen/core/CachingHostAllocator.h")
  if(NOT EXISTS "${header}" OR NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/c10/cuda/CUDAStream.h")
    glassbox_torch_missing("the PyTorch at ${TORCH_INSTALL_PREFIX} has no CUDA host allocator headers")
    return()
  endif()
  file(STRINGS "${header}" priority REGEX "uint8_t priority")
  if(NOT priority)
    glassbox_torch_missing("the PyTorch at ${TORCH_INSTALL_PREFIX} is older than 2.11 (setHostAllocator takes no priority)")
    return()
  endif()
  find_package(Python3 COMPONENTS Development.Module QUIET)
  if(NOT Python3_Development.Module_FOUND)
    glassbox_torch_missing("no Python headers (set Python3_INCLUDE_DIR)")
    return()
  endif()
  # The C++ ABI flag Torch was built with (-D_GLIBCXX_USE_CXX11_ABI=...).
  separate_arguments(flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  set(GLASSBOX_TORCH_CXX_FLAGS ${flags} PARENT_SCOPE)
  set(TORCH_INSTALL_PREFIX "${TORCH_INSTALL_PREFIX}" PARENT_SCOPE)
  set(Python3_INCLUDE_DIRS "${Python3_INCLUDE_DIRS}" PARENT_SCOPE)
  set(GLASSBOX_HAVE_TORCH ON PARENT_SCOPE)
endfunction()

if(NOT GLASSBOX_TORCH STREQUAL "OFF")
  glassbox_find_torch()
endif()
