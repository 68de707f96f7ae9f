/* producer/vflight.c: the per-voucher count of purchases that may still reach Kafka
 * (producer/vflight.h, DESIGN.md 12 b): a chained hash table under one mutex; an entry
 * is freed when its count drops to 0, so the table holds only vouchers with purchases in
 * flight. A purchase whose entry cannot be allocated counts in `anywhere` (every voucher
 * then reads as busy: no ack is ever given on a guess). */
#include <pthread.h>
#include <stdlib.h>

#include "vflight.h"

#define VF_SLOTS 1024                   /* chains; vouchers in flight at once spread over them */

typedef struct vf_node {
        int64_t voucher_id;
        int64_t n;
        struct vf_node *next;
} vf_node_t;

static pthread_mutex_t vf_mu = PTHREAD_MUTEX_INITIALIZER;
static vf_node_t *slots[VF_SLOTS];      /* guarded by vf_mu */
static int64_t anywhere;                /* guarded by vf_mu: purchases counted against all */

static size_t slot_of(int64_t voucher_id)
{
        uint64_t h = (uint64_t)voucher_id * 0x9E3779B97F4A7C15ull;

        return (size_t)(h >> 54) % VF_SLOTS;
}

void fr_vflight_enter(int64_t voucher_id, int *counted)
{
        vf_node_t **pp, *nd;

        pthread_mutex_lock(&vf_mu);
        if (*counted) {
                pthread_mutex_unlock(&vf_mu);
                return;
        }
        pp = &slots[slot_of(voucher_id)];
        for (nd = *pp; nd && nd->voucher_id != voucher_id; nd = nd->next)
                ;
        if (!nd && (nd = calloc(1, sizeof(*nd)))) {
                nd->voucher_id = voucher_id;
                nd->next = *pp;
                *pp = nd;
        }
        if (nd) {
                nd->n++;
                *counted = 1;
        } else {
                anywhere++;
                *counted = 2;   /* counted in `anywhere` */
        }
        pthread_mutex_unlock(&vf_mu);
}

void fr_vflight_leave(int64_t voucher_id, int *counted)
{
        vf_node_t **pp, *nd;

        pthread_mutex_lock(&vf_mu);
        if (*counted == 2) {
                anywhere--;
        } else if (*counted == 1) {
                for (pp = &slots[slot_of(voucher_id)]; (nd = *pp) && nd->voucher_id != voucher_id;
                     pp = &nd->next)
                        ;
                if (nd && --nd->n == 0) {
                        *pp = nd->next;
                        free(nd);
                }
        }
        *counted = 0;
        pthread_mutex_unlock(&vf_mu);
}

int64_t fr_vflight_count(int64_t voucher_id)
{
        vf_node_t *nd;
        int64_t n;

        pthread_mutex_lock(&vf_mu);
        for (nd = slots[slot_of(voucher_id)]; nd && nd->voucher_id != voucher_id; nd = nd->next)
                ;
        n = anywhere + (nd ? nd->n : 0);
        pthread_mutex_unlock(&vf_mu);
        return n;
}
