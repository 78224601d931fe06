# Warnings apply to glassbox's own targets only, never to dependencies.
function(glassbox_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor>)
  if(GLASSBOX_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

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
  glassbox_warnings(${target})
endfunction()
