# `cmake --install` puts headers, the library and a CMake package in place:
#   find_package(torchtrt_executorch_backend) + target_link_libraries(app PRIVATE torchtrt::executorch_backend)
include(CMakePackageConfigHelpers)

install(TARGETS torchtrt_executorch_backend EXPORT torchtrt_executorch_backend_targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Every public header (include/torch_tensorrt/executorch/): TensorRTBackend.h, CudaStreamGuard.h,
# GreenContext.h (the partitions API), Error.h (the one error vocabulary), and Engine.h with
# BlobMetadata.h (the engine API, versioned: bring your own engine with set_engine_factory), SloController.h, with
# whatever else lives there. tests/consumer builds an application against exactly this install.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(TRTET_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/torchtrt_executorch_backend)
install(EXPORT torchtrt_executorch_backend_targets NAMESPACE torchtrt:: DESTINATION ${TRTET_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/torchtrt_executorch_backendConfig.cmake.in
  ${PROJECT_BINARY_DIR}/torchtrt_executorch_backendConfig.cmake INSTALL_DESTINATION ${TRTET_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/torchtrt_executorch_backendConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/torchtrt_executorch_backendConfig.cmake
  ${PROJECT_BINARY_DIR}/torchtrt_executorch_backendConfigVersion.cmake DESTINATION ${TRTET_CMAKE_DIR})
