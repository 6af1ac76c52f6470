# The install rules and the package files (docs/PACKAGING.md): the library, its headers, the
# programs, rig_remoteConfig.cmake with its version file and exported targets (namespace
# rig_remote::), and rig_remote.pc. Included by the top-level CMakeLists.txt when RIG_INSTALL.
include(CMakePackageConfigHelpers)
set(RIG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rig_remote)

install(TARGETS rig_remote EXPORT rig_remoteTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# One include folder: rig/edge.h, rig/edge.hpp, rig/export.h, rig/remote/, and the engine and
# wire headers the C++ ones include.
# Test-only headers (fault injection, the stop-order hook) stay out.
install(DIRECTORY proxy/include/ engine/include/ wire/include/ include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp"
        PATTERN "faulty_socket.h" EXCLUDE PATTERN "test_hook.h" EXCLUDE)

# The programs, exported too (rig_remote::rig-agent, rig_remote::rig-asm, ...): a runtime's
# build can assemble programs with rig-asm and its tests can start a rig-agent.
set(rig_programs)
if(RIG_PROGRAMS)
  list(APPEND rig_programs rig-agent rig-info rig-demo rig-asm)
  install(DIRECTORY program/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rig_remote/programs)
  # The agent as a systemd service (Type=notify, LimitMEMLOCK) and an example of its config file.
  install(FILES packaging/rig-agent.service DESTINATION lib/systemd/system)
  install(FILES packaging/rig-agent.conf DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
  include(cmake/man.cmake)
endif()
if(RIG_BENCH)
  list(APPEND rig_programs rig-bench)
  install(FILES bench/plot.py DESTINATION ${CMAKE_INSTALL_DATADIR}/rig_remote)
endif()
if(rig_programs)
  install(TARGETS ${rig_programs} EXPORT rig_remoteTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES LICENSE README.md docs/PACKAGING.md docs/TROUBLESHOOTING.md docs/ENVIRONMENT.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

install(EXPORT rig_remoteTargets NAMESPACE rig_remote:: DESTINATION ${RIG_CMAKE_DIR})
configure_package_config_file(cmake/rig_remoteConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rig_remoteConfig.cmake INSTALL_DESTINATION ${RIG_CMAKE_DIR})
# The C++ headers are source-compatible within a minor version.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rig_remoteConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rig_remoteConfig.cmake
              ${PROJECT_BINARY_DIR}/rig_remoteConfigVersion.cmake
        DESTINATION ${RIG_CMAKE_DIR})

# rig_remote.pc, relocatable: its prefix is found from the folder it lies in.
file(RELATIVE_PATH RIG_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" RIG_PC_UP "${RIG_PC_UP}")
if(BUILD_SHARED_LIBS)  # the shared library brings its dependencies itself
  set(RIG_PC_DEPENDENCIES "Requires.private: liburing >= 2.3, libcrypto >= 3
Libs: -L\${libdir} -lrig_remote
Libs.private: -lmimalloc -pthread")
else()  # a static library's users link what it uses
  set(RIG_PC_DEPENDENCIES "Requires: liburing >= 2.3, libcrypto >= 3
Libs: -L\${libdir} -lrig_remote -lmimalloc -pthread")
endif()
configure_file(cmake/rig_remote.pc.in ${PROJECT_BINARY_DIR}/rig_remote.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rig_remote.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
