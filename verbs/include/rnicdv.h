/* Direct verbs of the RNIC's libibverbs: what <infiniband/verbs.h> cannot say.
 * Generated from verbs/src/dv.rs by cbindgen (verbs/tests/header_fresh.rs): do not edit.
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
 * Both write the original word to the 8 octets at sge (host order) and complete with
 * IBV_WC_FETCH_ADD and IBV_WC_COMP_SWAP.
 *
 * Link with the RNIC's libibverbs (-libverbs from its directory); see docs/VERBS.md. */

#ifndef RNICDV_H
#define RNICDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

/**
 * A masked atomic request (`struct rnicdv_masked_atomic_wr`).
 */
struct rnicdv_masked_atomic_wr {
  /**
   * Returned in the completion.
   */
  uint64_t wr_id;
  /**
   * Receives the original word: 8 octets, LOCAL_WRITE.
   */
  struct ibv_sge sge;
  /**
   * The remote word: 8-aligned, in a region with IBV_ACCESS_REMOTE_ATOMIC.
   */
  uint64_t remote_addr;
  uint32_t rkey;
  /**
   * IBV_SEND_SIGNALED (or the QP's sq_sig_all) for a completion on success.
   */
  unsigned int send_flags;
  /**
   * FetchAdd: the Add Data. CmpSwap: the Compare Data.
   */
  uint64_t compare_add;
  /**
   * FetchAdd: the Add Mask (a set bit ends a field). CmpSwap: the Compare Mask.
   */
  uint64_t compare_add_mask;
  /**
   * CmpSwap: the Swap Data.
   */
  uint64_t swap;
  /**
   * CmpSwap: the Swap Mask.
   */
  uint64_t swap_mask;
};

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * Posts a masked FetchAdd on an RC QP in RTS: 0, or an errno value (EINVAL for a bad
 * request, ENOMEM for a full send queue).
 */
int rnicdv_post_masked_fetch_add(struct ibv_qp *qp, const struct rnicdv_masked_atomic_wr *wr);

/**
 * Posts a masked CmpSwap on an RC QP in RTS: 0, or an errno value (EINVAL for a bad
 * request, ENOMEM for a full send queue).
 */
int rnicdv_post_masked_cmp_swap(struct ibv_qp *qp, const struct rnicdv_masked_atomic_wr *wr);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RNICDV_H */
