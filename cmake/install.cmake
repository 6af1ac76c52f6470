# The install rules and the package files (docs/PACKAGING.md): the libraries, their headers, the
# programs, rig_remoteConfig.cmake with its version file and exported targets (namespace
# rig_remote::), rig_remote.pc and rig_remote_static.pc, the systemd unit, and the documents.
# Included by the top-level CMakeLists.txt when RIG_INSTALL.
include(CMakePackageConfigHelpers)
set(RIG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rig_remote)

# librig_remote.a always (rig_remote::rig_remote_static: the C ABI and the C++ API); with
# BUILD_SHARED_LIBS also librig_remote.so.MAJOR (rig_remote::rig_remote: the C ABI only). The
# static library's export set is a file of its own in a shared package, so a C program's
# find_package needs none of the static library's dependencies (rig_remoteConfig.cmake.in).
if(BUILD_SHARED_LIBS)
  set(rig_static_export rig_remote_staticTargets)
else()
  set(rig_static_export rig_remoteTargets)
endif()
install(TARGETS rig_remote_static EXPORT ${rig_static_export} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rig_remote EXPORT rig_remoteTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# One include folder holding the API and only what it includes: rig/remote.h and rig/edge.h (C),
# rig/edge.hpp, rig/export.h and rig/remote/{abi,job,link,proxy}.h (C++). No engine or wire
# header and no test-only header: scripts/examples checks that every installed header is one the
# API reaches, and that each compiles on its own.
set(RIG_INCLUDE_DEST ${CMAKE_INSTALL_INCLUDEDIR}/rig)
install(FILES proxy/include/rig/edge.h proxy/include/rig/remote.h proxy/include/rig/edge.hpp
              include/rig/export.h
        DESTINATION ${RIG_INCLUDE_DEST})
install(FILES proxy/include/rig/remote/abi.h proxy/include/rig/remote/job.h
              proxy/include/rig/remote/link.h proxy/include/rig/remote/proxy.h
        DESTINATION ${RIG_INCLUDE_DEST}/remote)

# The programs, exported too (rig_remote::rig-agent, rig_remote::rig-asm, ...): a runtime's
# build can assemble programs with rig-asm and its tests can start a rig-agent.
set(rig_programs)
if(RIG_PROGRAMS)
  list(APPEND rig_programs rig-agent rig-info rig-demo rig-asm)
  install(DIRECTORY program/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rig_remote/programs)
  # The agent as a systemd service (Type=notify, LimitMEMLOCK), its ExecStart naming the
  # installed rig-agent: the prefix is known only at install time (cmake --install --prefix).
  install(CODE "set(RIG_UNIT_SOURCE \"${PROJECT_SOURCE_DIR}/packaging/rig-agent.service\")
    set(RIG_UNIT_WORK \"${PROJECT_BINARY_DIR}/packaging\")
    set(RIG_UNIT_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
    include(\"${PROJECT_SOURCE_DIR}/cmake/install_unit.cmake\")")
  include(cmake/man.cmake)
endif()
if(RIG_BENCH)
  list(APPEND rig_programs rig-bench)
  install(FILES bench/plot.py DESTINATION ${CMAKE_INSTALL_DATADIR}/rig_remote)
endif()
if(rig_programs)
  install(TARGETS ${rig_programs} EXPORT rig_remoteTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The documents, in the source tree's layout under share/doc/rig_remote, so that the references
# between them resolve as they do in the repository (the ctest docs_references_resolve and
# scripts/examples check both). The examples and packaging/ go with them.
set(RIG_INSTALLED_DOCS README.md LICENSE docs/PACKAGING.md docs/SEMANTICS.md docs/TUNING.md
    docs/TROUBLESHOOTING.md docs/ENVIRONMENT.md agent/README.md wire/PROTOCOL.md
    program/FORMAT.md bench/RESULTS.md tests/README.md tests/CONFORMANCE.md tests/RELIABILITY.md)
if(EXISTS ${PROJECT_SOURCE_DIR}/ocaml/README.md)  # README.md points at it
  list(APPEND RIG_INSTALLED_DOCS ocaml/README.md)
endif()
foreach(doc ${RIG_INSTALLED_DOCS})
  get_filename_component(dir ${doc} DIRECTORY)
  install(FILES ${doc} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${dir})
endforeach()
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples
        REGEX "/_build(/|$)" EXCLUDE)
install(FILES packaging/rig-agent.service packaging/rig-agent.conf packaging/rig-agent-gpu.conf
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/packaging)

install(EXPORT rig_remoteTargets NAMESPACE rig_remote:: DESTINATION ${RIG_CMAKE_DIR})
if(BUILD_SHARED_LIBS)
  install(EXPORT rig_remote_staticTargets NAMESPACE rig_remote:: DESTINATION ${RIG_CMAKE_DIR})
endif()
configure_package_config_file(cmake/rig_remoteConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rig_remoteConfig.cmake INSTALL_DESTINATION ${RIG_CMAKE_DIR})
# The C++ headers are source-compatible within a minor version (the C ABI's compatibility is the
# soname's: docs/PACKAGING.md).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rig_remoteConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rig_remoteConfig.cmake
              ${PROJECT_BINARY_DIR}/rig_remoteConfigVersion.cmake
        DESTINATION ${RIG_CMAKE_DIR})

# rig_remote.pc (the C ABI: -lrig_remote, the shared library where there is one, else the static
# one with pkg-config --static) and rig_remote_static.pc (the static library by its path, with
# what it links: the C++ API's). Relocatable: the prefix is found from the folder they lie in.
file(RELATIVE_PATH RIG_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" RIG_PC_UP "${RIG_PC_UP}")
set(RIG_PC_NAME rig_remote)
set(RIG_PC_DESCRIPTION "the C ABI (rig/remote.h, rig/edge.h; C99)")
set(RIG_PC_DEPENDENCIES "Requires.private: liburing >= 2.3, libcrypto >= 3
Libs: -L\${libdir} -lrig_remote
Libs.private: -lmimalloc -pthread -lstdc++ -lm")
configure_file(cmake/rig_remote.pc.in ${PROJECT_BINARY_DIR}/rig_remote.pc @ONLY)
set(RIG_PC_NAME rig_remote_static)
set(RIG_PC_DESCRIPTION "the static library: the C ABI and the C++ API (rig/remote/*.h; C++20)")
set(RIG_PC_DEPENDENCIES "Requires: liburing >= 2.3, libcrypto >= 3
Libs: \${libdir}/librig_remote.a -lmimalloc -pthread -lstdc++ -lm")
configure_file(cmake/rig_remote.pc.in ${PROJECT_BINARY_DIR}/rig_remote_static.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rig_remote.pc ${PROJECT_BINARY_DIR}/rig_remote_static.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
