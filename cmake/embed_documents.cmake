# Write the task families declared as documents (server/core/tasks/*.json) into one C file as
# NUL-terminated strings, rs_task_documents_<name> for tasks/<name>.json, so that the server
# carries them without reading files. Run by the robosim_core build: cmake -DOUT=... -DIN=...
string(REPLACE "|" ";" files "${IN}")
set(text "/* Generated from the task documents (server/core/tasks/NAME.json) by cmake/embed_documents.cmake. */\n")
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND text "const char rs_task_documents_${name}[] = {${bytes}0};\n")
endforeach()
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
