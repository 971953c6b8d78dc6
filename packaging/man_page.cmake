# Writes gather(1), gzip-compressed, with help2man from `gather --help` and `gather --version`,
# plus one subsection per subcommand from `gather <subcommand> --help`, so the page never lists an
# option the binary does not have. Run by packaging.cmake as a build step:
#   cmake -DGATHER=<binary> -DHELP2MAN=<help2man> -DINCLUDE=<gather.h2m> -DOUT=<gather.1.gz> -P man_page.cmake
foreach(var GATHER HELP2MAN INCLUDE OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "man_page.cmake: -D${var}= is required")
  endif()
endforeach()

function(run_help out)
  execute_process(COMMAND ${GATHER} ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "man_page.cmake: `${GATHER} ${ARGN} --help` failed (${rc})")
  endif()
  string(REPLACE "${GATHER}" "gather" text "${text}") # CLI11 prints argv[0] in Usage:
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The subcommands as `gather --help` lists them: "  name   description" under "Subcommands:".
run_help(top)
string(REGEX REPLACE ".*\nSubcommands:\n" "" listing "${top}")
string(REGEX MATCHALL "(^|\n)  [a-z]+ " names "${listing}")
set(roff "[commands]\n")
foreach(name IN LISTS names)
  string(STRIP "${name}" name)
  run_help(help ${name})
  # Literal text in roff: backslashes escaped, no line may start with a control character.
  string(REPLACE "\\" "\\e" help "${help}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
  string(APPEND roff ".SS \"gather ${name}\"\n.nf\n${help}.fi\n")
endforeach()
if(NOT roff MATCHES "gather serve")
  message(FATAL_ERROR "man_page.cmake: no subcommand found in `gather --help`:\n${top}")
endif()

get_filename_component(dir "${OUT}" DIRECTORY)
set(commands_h2m "${dir}/gather-commands.h2m")
set(page "${dir}/gather.1")
file(WRITE "${commands_h2m}" "${roff}")
execute_process(
  COMMAND ${HELP2MAN} --no-info --section=1 --include=${INCLUDE} --include=${commands_h2m}
          --output=${page} ${GATHER}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "man_page.cmake: help2man failed (${rc}): ${err}")
endif()
# Debian ships man pages gzip-compressed; -n keeps the timestamp out, so equal pages are equal files.
execute_process(COMMAND gzip -9nf ${page} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUT}")
  message(FATAL_ERROR "man_page.cmake: gzip ${page} failed (${rc})")
endif()
