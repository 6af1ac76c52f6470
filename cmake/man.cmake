# Man pages of the programs, generated from their --help by help2man (scripts/setup installs it)
# and installed into share/man/man1. Without help2man there are none, and the build says so.
find_program(RIG_HELP2MAN help2man)
if(NOT RIG_HELP2MAN)
  message(STATUS "help2man not found: no man pages (scripts/setup installs it)")
  return()
endif()
set(rig_man_pages)
set(rig-agent_what "the agent that opens a machine's devices for rig-remote jobs")
set(rig-info_what "what this machine offers rig-remote (the build, GPUs, io_uring, zero-copy, memlock, variables), or an agent's status")
set(rig-demo_what "drives a rig-agent's devices through proxies and prints figures")
set(rig-asm_what "assembles rig.program text into a binary")
set(rig-bench_what "copy bandwidth and tiny-handover figures of rig-remote, end to end")
set(rig_man_programs rig-agent rig-info rig-demo rig-asm)
if(RIG_BENCH)
  list(APPEND rig_man_programs rig-bench)
endif()
foreach(program ${rig_man_programs})
  set(page ${PROJECT_BINARY_DIR}/man/${program}.1)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${RIG_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
            "--name=${${program}_what}" --output=${page} $<TARGET_FILE:${program}>
    DEPENDS ${program}
    COMMENT "man page of ${program}" VERBATIM)
  list(APPEND rig_man_pages ${page})
endforeach()
add_custom_target(rig_man_pages ALL DEPENDS ${rig_man_pages})
install(FILES ${rig_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
