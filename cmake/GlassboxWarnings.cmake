# Warnings apply to glassbox's own targets only, never to dependencies.
function(glassbox_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
  if(GLASSBOX_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# Thread-locals through TLS descriptors (-mtls-dialect=gnu2) where the
# compiler has them. Every library is position-independent (it links into
# shared libraries, glassbox_torch among them), and the default dialect
# reaches a thread_local through a call to __tls_get_addr: linked into an
# executable the linker turns it into a load, but the compiler has already
# kept every value live across the call in a callee-saved register. The host
# allocator's cached pair saved and restored five registers in each half for
# that alone (9.2-10.6 -> 7.4 ns on the dev machine without them). A
# descriptor call clobbers one register and, unlike the initial-exec model,
# still loads with dlopen (tests/unit/dlopen_test.cpp).
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-mtls-dialect=gnu2 GLASSBOX_TLS_DESCRIPTORS)

# glassbox_library(PART sources...): the target glassbox_PART, exported and
# aliased as glassbox::PART, with the folder's include/ as its public headers.
function(glassbox_library part)
  set(target glassbox_${part})
  add_library(${target} ${ARGN})
  add_library(glassbox::${part} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${part} OUTPUT_NAME ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  if(GLASSBOX_TLS_DESCRIPTORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-mtls-dialect=gnu2>)
  endif()
  glassbox_warnings(${target})
endfunction()
