# `cmake --install` puts headers, libraries and a package config in place, so
# a service can `find_package(glassbox)` and link glassbox::core etc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_gb_targets glassbox_instrumentation glassbox_core)
set(_gb_include_dirs instrumentation/include/ core/include/)
if(TARGET glassbox_cuda)
  list(APPEND _gb_targets glassbox_cuda)
  list(APPEND _gb_include_dirs cuda/include/)
endif()
if(TARGET glassbox_exporters)
  list(APPEND _gb_targets glassbox_exporters)
  list(APPEND _gb_include_dirs exporters/include/)
endif()

install(TARGETS ${_gb_targets} EXPORT glassboxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir IN LISTS _gb_include_dirs)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(EXPORT glassboxTargets NAMESPACE glassbox:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)

configure_package_config_file(cmake/glassboxConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/glassboxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/glassboxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/glassbox)
