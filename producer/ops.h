/* producer/ops.h: the front's operations listener (DESIGN.md 15 "Operations listener"):
 * /healthz, /readyz and /metrics on SECKILL_OPS_ADDR only, never on the API listener. */
#pragma once
#include <stddef.h>

#include "sk/lease.h"

/** Start serving on g_fr.ops_addr ("off" = no listener) with @p gen (borrowed: the
 *  worker-id lease /readyz reports; must outlive the listener). @returns 0, or -1 with
 *  the reason (bad address, address in use): a front that cannot serve its probes does
 *  not start. Main thread only. */
int fr_ops_start(sk_idgen_t *gen, char *errstr, size_t errstr_size);
/** Stop the listener (after the API listener stopped). Main thread only. */
void fr_ops_stop(void);
