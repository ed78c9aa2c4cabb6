/* What the verbs test programs share: a failed check prints "FAIL:" and its reason, and
 * ends the program with status 1 (from any thread); a bounded wait for one completion; the
 * walk of an RC QP through INIT and RTR (to the QP `dest` of the same device) to RTS. */
#ifndef VERBS_TEST_H
#define VERBS_TEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define POLL_LIMIT 5000000

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

static struct ibv_wc wait_one(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	for (long i = 0; i < POLL_LIMIT; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0, "%s: ibv_poll_cq returned %d", what, n);
		if (n == 1)
			return wc;
	}
	fail("%s: no completion after %d polls", what, POLL_LIMIT);
	return wc;
}

static void expect_success(struct ibv_wc wc, enum ibv_wc_opcode op, uint64_t wr_id, const char *what)
{
	CHECK(wc.status == IBV_WC_SUCCESS, "%s: status %s", what, ibv_wc_status_str(wc.status));
	CHECK(wc.opcode == op, "%s: opcode %d, not %d", what, wc.opcode, op);
	CHECK(wc.wr_id == wr_id, "%s: wr_id %" PRIu64 ", not %" PRIu64, what, wc.wr_id, wr_id);
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state state, uint32_t dest)
{
	struct ibv_qp_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.qp_state = state;
	int mask = IBV_QP_STATE;
	if (state == IBV_QPS_INIT) {
		attr.port_num = 1;
		attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
	} else if (state == IBV_QPS_RTR) {
		attr.dest_qp_num = dest;
		attr.max_dest_rd_atomic = 4;
		mask |= IBV_QP_DEST_QPN | IBV_QP_MAX_DEST_RD_ATOMIC;
	} else if (state == IBV_QPS_RTS) {
		attr.max_rd_atomic = 4;
		mask |= IBV_QP_MAX_QP_RD_ATOMIC;
	}
	int e = ibv_modify_qp(qp, &attr, mask);
	CHECK(e == 0, "QP %u to state %d: %s", qp->qp_num, state, strerror(e));
}

#endif
