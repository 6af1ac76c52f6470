# Installs packaging/rig-agent.service with its ExecStart naming the installed rig-agent, at
# install time (the prefix may be given then: cmake --install --prefix). Run by install(CODE) of
# cmake/install.cmake, which sets RIG_UNIT_SOURCE, RIG_UNIT_WORK and RIG_UNIT_BINDIR.
set(bindir "${RIG_UNIT_BINDIR}")
if(NOT IS_ABSOLUTE "${bindir}")
  set(bindir "${CMAKE_INSTALL_PREFIX}/${bindir}")
endif()
file(READ "${RIG_UNIT_SOURCE}" unit)
string(REPLACE "ExecStart=/usr/bin/rig-agent " "ExecStart=${bindir}/rig-agent " unit "${unit}")
file(WRITE "${RIG_UNIT_WORK}/rig-agent.service" "${unit}")
file(INSTALL "${RIG_UNIT_WORK}/rig-agent.service" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
