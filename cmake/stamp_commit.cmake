# Writes OUT from the template IN with MOETUNE_GIT_COMMIT = HEAD's short hash, "+dirty" when
# tracked files differ from HEAD, "unknown" outside git. Runs at every build (the stamp target),
# so a binary names the tree it was built from, not the one CMake last configured; OUT is
# rewritten only when its text changes, so an unchanged stamp rebuilds nothing. Other @VARS@ of
# IN come as -D definitions. Invoked as: cmake -DSRC=... -DIN=... -DOUT=... -P stamp_commit.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE MOETUNE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT MOETUNE_GIT_COMMIT)
  set(MOETUNE_GIT_COMMIT "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(dirty)
    string(APPEND MOETUNE_GIT_COMMIT "+dirty")
  endif()
endif()
configure_file(${IN} ${OUT}.tmp @ONLY)
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
