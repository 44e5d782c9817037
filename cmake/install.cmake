# The C++ package: `cmake --install build --component dev --prefix P` installs MoeRunner's
# libraries (moetune::runtime, with moetune::kernels and moetune::core behind it; no tuner, no
# SQLite), its headers and a CMake package, so an engine writes
#   find_package(moetune REQUIRED)
#   target_link_libraries(engine PRIVATE moetune::runtime)
# examples/03_find_package is such a consumer; tests/install/find_package_test.sh builds it.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set_target_properties(moetune_core PROPERTIES EXPORT_NAME core)
set_target_properties(moetune_kernels PROPERTIES EXPORT_NAME kernels)
set_target_properties(moetune_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS moetune_core moetune_kernels moetune_runtime EXPORT moetuneTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES include/moetune/moe_runner.hpp DESTINATION include/moetune COMPONENT dev)
# The headers moe_runner.hpp reaches, under include/moetune/detail/ as they sit under src/.
file(GLOB MOETUNE_CORE_HEADERS ${CMAKE_SOURCE_DIR}/src/core/*.hpp)
install(FILES ${MOETUNE_CORE_HEADERS} DESTINATION include/moetune/detail/core COMPONENT dev)
install(FILES src/kernels/fast_paths.hpp DESTINATION include/moetune/detail/kernels COMPONENT dev)
set(MOETUNE_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/moetune)
install(EXPORT moetuneTargets NAMESPACE moetune:: DESTINATION ${MOETUNE_CONFIG_DIR} COMPONENT dev)
configure_package_config_file(cmake/moetuneConfig.cmake.in
  ${CMAKE_BINARY_DIR}/moetuneConfig.cmake INSTALL_DESTINATION ${MOETUNE_CONFIG_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/moetuneConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/moetuneConfig.cmake ${CMAKE_BINARY_DIR}/moetuneConfigVersion.cmake
        DESTINATION ${MOETUNE_CONFIG_DIR} COMPONENT dev)
