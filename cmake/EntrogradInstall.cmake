# `cmake --install` and the CMake package: a training job outside this tree
# links entrograd with
#
#   find_package(entrograd CONFIG REQUIRED)
#   target_link_libraries(my_job PRIVATE entrograd::torch)   # or entrograd::client
#
# The package carries its dependencies: entrogradConfig.cmake finds gRPC,
# protobuf, Abseil, prometheus-cpp (and Torch, CUDA when they were built)
# with find_dependency. Static libraries, so the consumer links what they
# need; nothing is loaded at run time but the system's shared libraries.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ENTROGRAD_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/entrograd")

# Library targets and the names they have in the package (entrograd::<name>).
set(entrograd_exported_targets
  entrograd_common common
  entrograd_proto proto
  entrograd_wire wire
  entrograd_internal internal
  entrograd_core core
  entrograd_transport transport
  entrograd_client_metrics client_metrics
  entrograd_client client)
if(TARGET entrograd_torch)
  list(APPEND entrograd_exported_targets entrograd_torch torch)
endif()
if(TARGET entrograd_cuda)
  list(APPEND entrograd_exported_targets entrograd_cuda cuda)
endif()

set(entrograd_library_targets)
while(entrograd_exported_targets)
  list(POP_FRONT entrograd_exported_targets target export_name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  list(APPEND entrograd_library_targets ${target})
endwhile()

install(TARGETS ${entrograd_library_targets}
  EXPORT entrograd-targets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

# Public headers: each library's include/, and the generated protocol headers
# (entrograd/wire/payload_proto.h includes entrograd/v1/aggregator.pb.h).
install(DIRECTORY
    "${PROJECT_SOURCE_DIR}/client_lib/include/"
    "${PROJECT_SOURCE_DIR}/client_lib/wire/include/"
    "${PROJECT_SOURCE_DIR}/client_lib/common/include/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY "${PROJECT_BINARY_DIR}/protos/gen/"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.pb.h")

# The programs, side by side in bin/ (entrograd-launch finds the worker and
# the aggregator next to itself).
foreach(program entrograd-aggregator entrograd-worker entrograd-launch entrograd-netns entrograd-cli)
  if(TARGET ${program})
    install(TARGETS ${program} RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  endif()
endforeach()

install(EXPORT entrograd-targets
  NAMESPACE entrograd::
  FILE entrogradTargets.cmake
  DESTINATION "${ENTROGRAD_INSTALL_CMAKEDIR}")

set(ENTROGRAD_PACKAGE_WITH_TORCH ${ENTROGRAD_WITH_TORCH})
set(ENTROGRAD_PACKAGE_WITH_CUDA ${ENTROGRAD_HAVE_CUDA})
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/entrogradConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/entrogradConfig.cmake"
  INSTALL_DESTINATION "${ENTROGRAD_INSTALL_CMAKEDIR}")
# 0.x: minor versions may break the API, so only the same minor matches.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/entrogradConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
    "${PROJECT_BINARY_DIR}/entrogradConfig.cmake"
    "${PROJECT_BINARY_DIR}/entrogradConfigVersion.cmake"
  DESTINATION "${ENTROGRAD_INSTALL_CMAKEDIR}")
