# Writes OUT: one `const char sk_lua_<name>[]` per LUA_DIR/<name>.lua, plus a table.
# Each script's embedded body is the LUA_DIR/lib/ files its first line names
# ("-- lib: validate expiry", in that order), then the script itself: Redis runs one
# self-contained body. A script names only what it uses: every lib function is a closure
# created on each call (DESIGN.md 4 "Cost of an admission"). deduct.lua and take.lua name
# none ("-- lib:"): their checks are written inline for the cost of the Lua VM; the others
# name lib/validate.lua and lib/expiry.lua.
file(GLOB files ${LUA_DIR}/*.lua)
list(SORT files)
set(body "/* Generated from the lua/ folder by cmake/embed_lua.cmake. Do not edit. */\n#include <stddef.h>\n#include \"sk/scripts.h\"\n")
set(table "")
set(n 0)
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} script)
  set(prelude "")
  if(script MATCHES "^-- lib:([a-z_ ]*)\n")
    string(REPLACE " " ";" libs "${CMAKE_MATCH_1}")
    foreach(l ${libs})
      if(NOT EXISTS ${LUA_DIR}/lib/${l}.lua)
        message(FATAL_ERROR "${f}: no lib/${l}.lua")
      endif()
      file(READ ${LUA_DIR}/lib/${l}.lua lib)
      string(APPEND prelude "${lib}\n")
    endforeach()
  else()
    message(FATAL_ERROR "${f}: the first line must name its libs (-- lib: ...)")
  endif()
  file(WRITE ${OUT}.${name}.lua "${prelude}${script}")
  file(READ ${OUT}.${name}.lua hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND body "static const char lua_${name}[] = {${hex}0x00};\n")
  string(APPEND table "    { \"${name}\", lua_${name}, sizeof(lua_${name}) - 1 },\n")
  math(EXPR n "${n}+1")
endforeach()
string(APPEND body "const sk_script_src_t sk_script_srcs[] = {\n${table}    { NULL, NULL, 0 }\n};\nconst size_t sk_script_nsrcs = ${n};\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
