# Write the built-in task families (server/core/tasks/NAME.json, each a JSON array of task
# documents) into one C file: each file's text as a NUL-terminated string, and the table of
# families, rs_builtin_task_families[], one row per file in the order of the names, so that the
# server carries them without reading files and a new family is one new file. Run by the
# robosim_core build: cmake -DOUT=... -DIN=...
string(REPLACE "|" ";" files "${IN}")
list(SORT files)
set(text "/* Generated from the task families (server/core/tasks/NAME.json) by cmake/embed_documents.cmake. */\n#include \"rs_task.h\"\n\n")
set(rows "")
set(n 0)
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "task family file ${f}: its name must be a C identifier (letters, digits, _)")
  endif()
  file(READ "${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND text "static const char documents_${name}[] = {${bytes}0};\n")
  string(APPEND rows "    {\"${name}\", documents_${name}},\n")
  math(EXPR n "${n} + 1")
endforeach()
string(APPEND text "\nconst rs_task_family_t rs_builtin_task_families[] = {\n${rows}};\n")
string(APPEND text "const int rs_builtin_task_nfamilies = ${n};\n")
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
