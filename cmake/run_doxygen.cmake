# cmake -DDOXYGEN=... -DSOURCE=... -DOUT=... -P run_doxygen.cmake: docs/Doxyfile, written into OUT.
file(READ ${SOURCE}/docs/Doxyfile doxyfile)
file(MAKE_DIRECTORY ${OUT})
file(WRITE ${OUT}/Doxyfile "${doxyfile}\nOUTPUT_DIRECTORY = ${OUT}\n")
execute_process(COMMAND ${DOXYGEN} ${OUT}/Doxyfile WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed on the public headers (exit ${rc}): see its warnings above")
endif()
