# The API reference from the public headers (docs/Doxyfile), with doxygen (scripts/setup installs
# it): the target `docs` writes build/docs/html, and the ctest doxygen_reads_the_public_headers
# fails on any warning of doxygen's. Without doxygen there is neither, and the build says so.
find_program(RIG_DOXYGEN doxygen)
if(NOT RIG_DOXYGEN)
  message(STATUS "doxygen not found: no API reference (scripts/setup installs it)")
  return()
endif()
set(RIG_DOXYGEN_RUN ${CMAKE_COMMAND} -DDOXYGEN=${RIG_DOXYGEN} -DSOURCE=${PROJECT_SOURCE_DIR}
    -DOUT=${PROJECT_BINARY_DIR}/docs -P ${PROJECT_SOURCE_DIR}/cmake/run_doxygen.cmake)
add_custom_target(docs COMMAND ${RIG_DOXYGEN_RUN} COMMENT "API reference: ${PROJECT_BINARY_DIR}/docs/html/index.html")
if(RIG_TESTS)
  add_test(NAME doxygen_reads_the_public_headers COMMAND ${RIG_DOXYGEN_RUN})
endif()
