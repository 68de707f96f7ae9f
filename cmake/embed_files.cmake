# Writes OUT: the files DIR/*.<ext> (EXTS: extensions separated by ',', e.g. "html,js")
# in file-name order, as one C table the sources use: each file a NUL-terminated byte
# array SYM_<n>, and the rows { "<name>", SYM_<n>[, <size>] } of `const TYPE TABLE[]`,
# ended by a NULL row, with `const size_t COUNT` rows before it. The one embedder of the
# build's data files: the migrations (ddl/*.sql -> sk_migrations[], sk/migrate.h) and the
# buyer page (producer/page/* -> fr_page_files[], page_files.h); the Lua scripts have
# their own (cmake/embed_lua.cmake: each body is assembled from its libs).
# Parameters (-D): OUT DIR EXTS INCLUDE TYPE TABLE COUNT SYM FROM (the folder, for the
# generated comment); NAME "name" keeps the extension in <name>, "name_we" drops it;
# SIZES 1 adds each file's size in bytes to its row. File names must be
# [a-z0-9_-]+.<ext>: a name is a C string and a URL or migration name as it stands.
foreach(p OUT DIR EXTS INCLUDE TYPE TABLE COUNT SYM FROM NAME SIZES)
  if(NOT DEFINED ${p})
    message(FATAL_ERROR "embed_files.cmake: -D${p}= is required")
  endif()
endforeach()
string(REPLACE "," ";" exts "${EXTS}")
string(REPLACE "," "|" ext_re "${EXTS}")
set(globs "")
foreach(e ${exts})
  list(APPEND globs ${DIR}/*.${e})
endforeach()
file(GLOB files ${globs})
list(SORT files)
set(body "/* Generated from ${FROM} by cmake/embed_files.cmake. Do not edit. */\n#include <stddef.h>\n#include \"${INCLUDE}\"\n")
set(table "")
set(n 0)
foreach(f ${files})
  get_filename_component(fname ${f} NAME)
  if(NOT fname MATCHES "^[a-z0-9_-]+\\.(${ext_re})$")
    message(FATAL_ERROR "${f}: file names here are [a-z0-9_-]+.(${ext_re})")
  endif()
  if(NAME STREQUAL "name_we")
    get_filename_component(fname ${f} NAME_WE)
  endif()
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND body "static const char ${SYM}_${n}[] = {${hex}0x00};\n")
  if(SIZES)
    file(SIZE ${f} size)
    string(APPEND table "    { \"${fname}\", ${SYM}_${n}, ${size} },\n")
  else()
    string(APPEND table "    { \"${fname}\", ${SYM}_${n} },\n")
  endif()
  math(EXPR n "${n}+1")
endforeach()
if(SIZES)
  set(last "{ NULL, NULL, 0 }")
else()
  set(last "{ NULL, NULL }")
endif()
string(APPEND body "const ${TYPE} ${TABLE}[] = {\n${table}    ${last}\n};\nconst size_t ${COUNT} = ${n};\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
