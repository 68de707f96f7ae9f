# Writes OUT: one `const char sk_lua_<name>[]` (NUL-terminated) per LUA_DIR/<name>.lua;
# the table of the scripts the sale runs, and their names, is common/sale/scripts.c.
# Each script's embedded body is the LUA_DIR/lib/ files its first line names
# ("-- lib: validate expiry", in that order), then the script itself: Redis runs one
# self-contained body. A script names only what it uses: every lib function is a closure
# created on each call (DESIGN.md 4 "Cost of an admission"). deduct.lua and take.lua name
# none ("-- lib:"): their checks are written inline for the cost of the Lua VM; the others
# name lib/validate.lua and lib/expiry.lua.
file(GLOB files ${LUA_DIR}/*.lua)
list(SORT files)
set(body "/* Generated from the lua/ folder by cmake/embed_lua.cmake. Do not edit. */\n")
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
  string(APPEND body "const char sk_lua_${name}[] = {${hex}0x00};\n")
endforeach()
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
