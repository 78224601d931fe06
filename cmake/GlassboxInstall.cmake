# `cmake --install` puts headers, libraries and a package config in place, so
# a service can `find_package(glassbox)` and link glassbox::core etc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_gb_targets glassbox_instrumentation glassbox_core)
set(_gb_include_dirs instrumentation/include/ core/include/)
if(TARGET glassbox_exporters)
  list(APPEND _gb_targets glassbox_exporters)
  list(APPEND _gb_include_dirs exporters/include/)
endif()

function(glassbox_install_export export_set)
  install(TARGETS ${ARGN} EXPORT ${export_set}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT ${export_set} NAMESPACE glassbox:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)
endfunction()
glassbox_install_export(glassboxTargets ${_gb_targets})
# glassbox::cuda in an export set of its own, which the package config loads
# only where the CUDA toolkit and cuDNN are found.
if(TARGET glassbox_cuda)
  glassbox_install_export(glassboxCudaTargets glassbox_cuda)
  list(APPEND _gb_include_dirs cuda/include/)
endif()
foreach(dir IN LISTS _gb_include_dirs)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()

configure_package_config_file(cmake/glassboxConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/glassboxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)
