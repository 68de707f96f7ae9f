/* sk/json_strict.h: signed JSON parsed strictly (DESIGN.md 15 "Hardening rules"): one
 * object, unique member names at every level, no NUL byte and no \u0000 escape (cJSON
 * would cut a string there), nothing but JSON white space after the object. The JWT
 * segments and the payment callback's body are parsed through it, so two readers of
 * the same signed bytes can never see two different documents. Pure, thread-safe. */
#pragma once
#include <stddef.h>
#include <cjson/cJSON.h>

/** @brief Parse the @p len bytes of @p text (need not be NUL-terminated) as one strict
 *  JSON object (file comment).
 *  @returns the tree, owned by the caller (cJSON_Delete), or NULL with *@p why (may be
 *  NULL) set to a static reason that never quotes the input: a permanent error of the
 *  input, or out of memory ("out of memory"). */
cJSON *sk_json_strict_object(const char *text, size_t len, const char **why);
/** @brief 1 if no two members of any object in the tree @p item (borrowed) share a name,
 *  at any depth. */
int sk_json_unique_names(const cJSON *item);
