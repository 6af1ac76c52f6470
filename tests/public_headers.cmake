# cmake -DCXX=... -DCC=... -DSOURCE=... -DOUT=... -P public_headers.cmake: compiles each public
# header of the source tree alone, as the first line of its own translation unit, with only the
# public include folders (proxy/include and include) on the include path; the top-level rig/*.h
# (the C headers and export.h) as C99 and C11 too. Fails if one does not compile alone, or if it
# reaches an engine or wire header by any path (shared/DESIGN.md, "Layout": a runtime includes
# none).
set(roots ${SOURCE}/proxy/include ${SOURCE}/include)
set(headers)
foreach(root IN LISTS roots)
  file(GLOB_RECURSE found RELATIVE ${root} ${root}/rig/*.h ${root}/rig/*.hpp)
  list(APPEND headers ${found})
endforeach()
list(SORT headers)
if(NOT headers)
  message(FATAL_ERROR "no public header found under ${SOURCE}")
endif()

set(failed 0)
# Compiles `header` as `lang` with `compiler` and the flags `std`; sets `failed` on a failure.
function(check header compiler lang std)
  execute_process(
    COMMAND ${compiler} -x ${lang} ${std} -fsyntax-only -H -Wall -Wextra
            -I${SOURCE}/proxy/include -I${SOURCE}/include -
    INPUT_FILE ${OUT}/unit
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # -H lists every header the unit opened, one per line, after dots for its depth.
  string(REGEX MATCHALL "[^\n]*/rig/(engine|wire)/[^\n]*" reached "${err}")
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "(^|\n)\\.+ [^\n]*" "" err "${err}")  # the -H list: the errors only
    message(SEND_ERROR "${header} (${lang} ${std}) does not compile alone:\n${err}")
    set(failed 1 PARENT_SCOPE)
  elseif(reached)
    list(JOIN reached "\n" reached)
    message(SEND_ERROR "${header} (${lang} ${std}) includes engine or wire headers:\n${reached}")
    set(failed 1 PARENT_SCOPE)
  else()
    message(STATUS "${header} (${lang} ${std}): alone, no engine or wire header")
  endif()
endfunction()

file(MAKE_DIRECTORY ${OUT})
foreach(header IN LISTS headers)
  # The typedef: a unit that is empty once its header is read is no error of the header's.
  file(WRITE ${OUT}/unit "#include \"${header}\"\ntypedef int rig_public_header_unit;\n")
  check(${header} ${CXX} c++ -std=c++20)
  if(header MATCHES "^rig/[^/]+\\.h$")  # C as well, as strict as scripts/examples has it
    check(${header} ${CC} c "-std=c99;-pedantic;-Werror")
    check(${header} ${CC} c "-std=c11;-pedantic;-Werror")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "a public header includes what a runtime cannot (see above)")
endif()
