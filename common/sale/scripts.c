/* scripts.c: the table of the sale's Lua scripts (sk/scripts.h): one Redis-layer object
 * per script, its name and its source embedded from lua/NAME.lua (cmake/embed_lua.cmake
 * writes `const char sk_lua_NAME[]`, NUL-terminated, with the lib/ files it names
 * first). A script missing from lua/ is a link error. The SHA cache in each object is
 * the Redis layer's (sk_redis_script_t). */
#include "sk/scripts.h"

extern const char sk_lua_deduct[], sk_lua_rollback[], sk_lua_claim[], sk_lua_release[],
        sk_lua_take[], sk_lua_settle[], sk_lua_home[];

static sk_redis_script_t scripts[SK_SCRIPT__N] = {
        [SK_SCRIPT_DEDUCT] = { .name = "deduct", .body = sk_lua_deduct },
        [SK_SCRIPT_ROLLBACK] = { .name = "rollback", .body = sk_lua_rollback },
        [SK_SCRIPT_CLAIM] = { .name = "claim", .body = sk_lua_claim },
        [SK_SCRIPT_RELEASE] = { .name = "release", .body = sk_lua_release },
        [SK_SCRIPT_TAKE] = { .name = "take", .body = sk_lua_take },
        [SK_SCRIPT_SETTLE] = { .name = "settle", .body = sk_lua_settle },
        [SK_SCRIPT_HOME] = { .name = "home", .body = sk_lua_home },
};

static sk_redis_script_t *script(sk_script_t s)
{
        return (int)s >= 0 && s < SK_SCRIPT__N ? &scripts[s] : NULL;
}

sk_err_t sk_script_eval(sk_redis_t *r, sk_script_t s, int nkeys, const char **keys, int nargs,
                        const char **args, redisReply **reply, char *errstr,
                        size_t errstr_size)
{
        if (!script(s)) {
                *reply = NULL;
                sk_seterr(errstr, errstr_size, "evalsha: bad script or argument count");
                return SK_EINVAL;
        }
        return sk_redis_evalsha(r, script(s), nkeys, keys, nargs, args, reply, errstr,
                                errstr_size);
}

sk_err_t sk_scripts_load(sk_redis_t *r, char *errstr, size_t errstr_size)
{
        return sk_redis_load_scripts(r, scripts, SK_SCRIPT__N, errstr, errstr_size);
}

int sk_scripts_loaded(sk_redis_t *r)
{
        return sk_redis_scripts_loaded(r, scripts, SK_SCRIPT__N);
}

const char *sk_script_sha(sk_script_t s)
{
        return sk_redis_script_sha(script(s));
}
