# The install rules and the package files (docs/PACKAGING.md): the library, its headers, the
# programs, rig_remoteConfig.cmake with its version file and exported targets (namespace
# rig_remote::), and rig_remote.pc. Included by the top-level CMakeLists.txt when RIG_INSTALL.
include(CMakePackageConfigHelpers)
set(RIG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rig_remote)

install(TARGETS rig_remote EXPORT rig_remoteTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# One include folder holding the API and only what it includes: rig/edge.h (C), rig/edge.hpp,
# rig/export.h, rig/remote/{abi,job,link,proxy}.h, and the two engine and two wire headers those
# reach (the backend choice and the counters a link holds; the accounts a welcome gives and their
# frame header). The rest of the engine and wire, and the test-only headers, stay out;
# scripts/examples checks that each installed header compiles on its own.
set(RIG_INCLUDE_DEST ${CMAKE_INSTALL_INCLUDEDIR}/rig)
install(FILES proxy/include/rig/edge.h proxy/include/rig/edge.hpp include/rig/export.h
        DESTINATION ${RIG_INCLUDE_DEST})
install(FILES proxy/include/rig/remote/abi.h proxy/include/rig/remote/job.h
              proxy/include/rig/remote/link.h proxy/include/rig/remote/proxy.h
        DESTINATION ${RIG_INCLUDE_DEST}/remote)
install(FILES engine/include/rig/engine/backend.h engine/include/rig/engine/counters.h
        DESTINATION ${RIG_INCLUDE_DEST}/engine)
install(FILES wire/include/rig/wire/frame_header.h wire/include/rig/wire/messages.h
        DESTINATION ${RIG_INCLUDE_DEST}/wire)

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
