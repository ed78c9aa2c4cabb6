/* Direct verbs of the RNIC's libibverbs: what <infiniband/verbs.h> cannot say.
 *
 * RFC 7306 masked atomics. ibv_post_send's atomics are their whole-word special case
 * (a plain add; a compare and swap of all 64 bits); these post the general ones on an RC
 * QP in RTS, as one more request of its send queue.
 *
 *   masked FetchAdd: adds compare_add to the remote word, the carry dropped at each bit
 *                    set in compare_add_mask (RFC 7306's Add Mask: a set bit ends a field).
 *   masked CmpSwap:  if (original ^ compare_add) & compare_add_mask is 0, the word becomes
 *                    (original & ~swap_mask) | (swap & swap_mask).
 *
 * Both write the original word to the 8 octets at sge (LOCAL_WRITE, host order) and
 * complete with IBV_WC_FETCH_ADD and IBV_WC_COMP_SWAP. The remote word is 8-aligned in a
 * region with IBV_ACCESS_REMOTE_ATOMIC. Return 0, or an errno value (EINVAL for a bad
 * request, ENOMEM for a full send queue).
 *
 * Link with the RNIC's libibverbs (-libverbs from its directory); see docs/VERBS.md. */
#ifndef RNICDV_H
#define RNICDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rnicdv_masked_atomic_wr {
	uint64_t wr_id;
	struct ibv_sge sge;        /* receives the original word */
	uint64_t remote_addr;
	uint32_t rkey;
	unsigned int send_flags;   /* IBV_SEND_SIGNALED */
	uint64_t compare_add;      /* FetchAdd: Add Data;  CmpSwap: Compare Data */
	uint64_t compare_add_mask; /* FetchAdd: Add Mask;  CmpSwap: Compare Mask */
	uint64_t swap;             /* CmpSwap: Swap Data */
	uint64_t swap_mask;        /* CmpSwap: Swap Mask */
};

int rnicdv_post_masked_fetch_add(struct ibv_qp *qp, const struct rnicdv_masked_atomic_wr *wr);
int rnicdv_post_masked_cmp_swap(struct ibv_qp *qp, const struct rnicdv_masked_atomic_wr *wr);

#ifdef __cplusplus
}
#endif

#endif
