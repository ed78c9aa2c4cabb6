/* A verbs program written against rdma-core's <infiniband/verbs.h>, run on the RNIC's
 * libibverbs (verbs/tests/c_programs.rs builds and runs it). Two RC QPs of one simulated
 * RNIC, connected through its looped-back streams, on memory from malloc:
 *
 *   - RDMA Write with Immediate, the receiver waiting on its completion channel
 *     (ibv_req_notify_cq, poll(2) on the channel's fd, ibv_get_cq_event, ibv_ack_cq_events);
 *   - RFC 7306 masked FetchAdd and masked CmpSwap through rnicdv.h, and the standard
 *     IBV_WR_ATOMIC_FETCH_AND_ADD / IBV_WR_ATOMIC_CMP_AND_SWP, each checked against the
 *     RFC 7306 pseudocode transcribed below;
 *   - SGE lists: a Send gathered from three buffers into a receive of two, an unsignaled
 *     RDMA Read into two sinks; an inline RDMA Write;
 *   - bad use: an unregistered lkey, alone or in a list (EINVAL, nothing posted), a PD or
 *     CQ still in use (EBUSY), a Send on a QP in ERROR (IBV_WC_WR_FLUSH_ERR), a CQ overrun
 *     (IBV_EVENT_CQ_ERR on the context's asynchronous event fd), destroyed objects and a
 *     closed device passed again (EINVAL).
 *
 * Every octet placed is checked, and the octets around it. Prints one "ok:" line per check
 * and exits 0, or prints "FAIL:" and exits 1. Every wait is bounded. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include "verbs_test.h"
#include "rnicdv.h"

#define BUF_LEN 4096
#define EVENT_WAIT_MS 60000


/* RFC 7306 section 5.1.1, the pseudocode as written: a bit of Add Mask set stops the carry
 * out of that bit. */
static uint64_t rfc_masked_fetch_add(uint64_t original, uint64_t add, uint64_t add_mask)
{
	uint64_t result = 0, carry = 0;
	for (int bit = 0; bit < 64; bit++) {
		uint64_t loc = 1ull << bit;
		uint64_t sum = carry + ((original & loc) >> bit) + ((add & loc) >> bit);
		carry = (sum & 2) >> 1;
		if (sum & 1)
			result |= loc;
		carry = carry && !(add_mask & loc);
	}
	return result;
}

/* RFC 7306 section 5.1.2. */
static uint64_t rfc_masked_cmp_swap(uint64_t original, uint64_t compare, uint64_t compare_mask,
				    uint64_t swap, uint64_t swap_mask)
{
	if (((compare ^ original) & compare_mask) == 0)
		return (original & ~swap_mask) | (swap & swap_mask);
	return original;
}

static void post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_sge *sge, uint64_t remote,
			uint32_t rkey, uint64_t compare_add, uint64_t swap, uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = remote;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	int e = ibv_post_send(qp, &wr, &bad);
	CHECK(e == 0, "post atomic %d: %s", op, strerror(e));
}

int main(void)
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	CHECK(list && num == 1, "one device expected, found %d", num);
	CHECK(strcmp(ibv_get_device_name(list[0]), "rnic0") == 0, "device name %s", ibv_get_device_name(list[0]));
	struct ibv_context *ctx = ibv_open_device(list[0]);
	CHECK(ctx, "ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);

	struct ibv_device_attr dattr;
	CHECK(ibv_query_device(ctx, &dattr) == 0, "ibv_query_device");
	CHECK(dattr.atomic_cap == IBV_ATOMIC_HCA && dattr.max_sge == 16 && dattr.phys_port_cnt == 1,
	      "device attributes: atomic_cap %d, max_sge %d, ports %d", dattr.atomic_cap, dattr.max_sge,
	      dattr.phys_port_cnt);
	struct ibv_port_attr pattr;
	CHECK(ibv_query_port(ctx, 1, &pattr) == 0, "ibv_query_port");
	CHECK(pattr.state == IBV_PORT_ACTIVE && pattr.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "port state %d, link layer %d", pattr.state, pattr.link_layer);
	printf("ok: device rnic0, atomics IBV_ATOMIC_HCA, port 1 active on Ethernet\n");

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
	struct ibv_comp_channel *channel = ibv_create_comp_channel(ctx);
	CHECK(channel, "ibv_create_comp_channel: %s", strerror(errno));
	struct ibv_cq *cq_a = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	int b_context = 0xb;
	struct ibv_cq *cq_b = ibv_create_cq(ctx, 16, &b_context, channel, 0);
	CHECK(cq_a && cq_b, "ibv_create_cq: %s", strerror(errno));

	/* malloc'ed, deliberately not page aligned. */
	uint8_t *a_buf = malloc(BUF_LEN + 24), *b_buf = malloc(BUF_LEN + 24);
	CHECK(a_buf && b_buf, "malloc");
	a_buf += 8;
	b_buf += 8;
	for (int i = 0; i < BUF_LEN; i++) {
		a_buf[i] = (uint8_t)(i * 7 + 1);
		b_buf[i] = 0xee;
	}
	int rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_mr *a_mr = ibv_reg_mr(pd, a_buf, BUF_LEN, rights);
	struct ibv_mr *b_mr = ibv_reg_mr(pd, b_buf, BUF_LEN, rights);
	CHECK(a_mr && b_mr, "ibv_reg_mr: %s", strerror(errno));
	CHECK(a_mr->addr == a_buf && a_mr->length == BUF_LEN && a_mr->lkey != b_mr->lkey, "MR fields");
	printf("ok: two regions on malloc'ed memory, lkeys 0x%x and 0x%x\n", a_mr->lkey, b_mr->lkey);

	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof init);
	init.send_cq = cq_a;
	init.recv_cq = cq_a;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 8;
	init.cap.max_recv_wr = 8;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	struct ibv_qp *qa = ibv_create_qp(pd, &init);
	CHECK(qa, "ibv_create_qp A: %s", strerror(errno));
	CHECK(init.cap.max_send_wr >= 8 && init.cap.max_recv_wr >= 8, "caps written back");
	init.send_cq = cq_b;
	init.recv_cq = cq_b;
	struct ibv_qp *qb = ibv_create_qp(pd, &init);
	CHECK(qb, "ibv_create_qp B: %s", strerror(errno));

	to_state(qa, IBV_QPS_INIT, 0);
	to_state(qb, IBV_QPS_INIT, 0);
	/* A receive posted in INIT, before the QP can receive: it waits for RTS. */
	struct ibv_recv_wr rwr, *bad_rwr = NULL;
	memset(&rwr, 0, sizeof rwr);
	rwr.wr_id = 0xb0;
	CHECK(ibv_post_recv(qb, &rwr, &bad_rwr) == 0, "post_recv in INIT");
	to_state(qa, IBV_QPS_RTR, qb->qp_num);
	to_state(qb, IBV_QPS_RTR, qa->qp_num);
	to_state(qa, IBV_QPS_RTS, 0);
	to_state(qb, IBV_QPS_RTS, 0);
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit;
	CHECK(ibv_query_qp(qa, &qattr, IBV_QP_STATE, &qinit) == 0 && qattr.qp_state == IBV_QPS_RTS &&
	      qattr.dest_qp_num == qb->qp_num, "query_qp: state %d, dest %u", qattr.qp_state, qattr.dest_qp_num);
	printf("ok: QPs %u and %u through INIT and RTR to RTS\n", qa->qp_num, qb->qp_num);

	/* RDMA Write with Immediate; B waits for it on its completion channel. */
	CHECK(ibv_req_notify_cq(cq_b, 0) == 0, "ibv_req_notify_cq");
	const uint32_t imm = htonl(0xc0ffee01);
	const int w_off = 100, w_len = 777;
	struct ibv_sge sge = { .addr = (uintptr_t)a_buf, .length = w_len, .lkey = a_mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xa1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = imm;
	wr.wr.rdma.remote_addr = (uintptr_t)(b_buf + w_off);
	wr.wr.rdma.rkey = b_mr->rkey;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post Write with Immediate");
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, EVENT_WAIT_MS) == 1, "no completion event within %d ms", EVENT_WAIT_MS);
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	CHECK(ibv_get_cq_event(channel, &ev_cq, &ev_ctx) == 0, "ibv_get_cq_event");
	CHECK(ev_cq == cq_b && ev_ctx == &b_context, "event for the wrong CQ");
	ibv_ack_cq_events(ev_cq, 1);
	struct ibv_wc wc = wait_one(cq_b, "Write with Immediate, receiver");
	expect_success(wc, IBV_WC_RECV_RDMA_WITH_IMM, 0xb0, "Write with Immediate, receiver");
	CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == imm, "immediate 0x%08x, flags %d", ntohl(wc.imm_data),
	      wc.wc_flags);
	CHECK(wc.qp_num == qb->qp_num && wc.src_qp == qa->qp_num, "QP numbers in the completion");
	expect_success(wait_one(cq_a, "Write with Immediate, sender"), IBV_WC_RDMA_WRITE, 0xa1,
		       "Write with Immediate, sender");
	for (int i = 0; i < BUF_LEN; i++) {
		uint8_t want = (i >= w_off && i < w_off + w_len) ? a_buf[i - w_off] : 0xee;
		CHECK(b_buf[i] == want, "octet %d of B: 0x%02x, not 0x%02x", i, b_buf[i], want);
	}
	printf("ok: RDMA Write with Immediate of %d octets: event on the channel, immediate 0x%08x, every octet placed, none around touched\n",
	       w_len, ntohl(wc.imm_data));

	/* Atomics on the word at B + 1024, the original coming back to A + 2048. */
	uint64_t *target = (uint64_t *)(b_buf + 1024);
	uint64_t *result = (uint64_t *)(a_buf + 2048);
	struct ibv_sge rsge = { .addr = (uintptr_t)result, .length = 8, .lkey = a_mr->lkey };
	uint64_t remote = (uintptr_t)target;

	struct {
		const char *name;
		int masked, cmp;
		uint64_t original, compare_add, compare_add_mask, swap, swap_mask;
	} cases[] = {
		{ "masked FetchAdd", 1, 0, 0x00ff00ff7ffffff0ull, 0x0101010100000020ull, 0x8000800080000000ull, 0, 0 },
		{ "masked CmpSwap, match", 1, 1, 0x0123456789abcdefull, 0x0000456700000000ull, 0x0000ffff00000000ull,
		  0xfedcba9876543210ull, 0x00000000ffff0000ull },
		{ "masked CmpSwap, no match", 1, 1, 0x0123456789abcdefull, 0x0000456800000000ull, 0x0000ffff00000000ull,
		  0xfedcba9876543210ull, 0xffffffffffffffffull },
		{ "IBV_WR_ATOMIC_FETCH_AND_ADD", 0, 0, 0xfffffffffffffff0ull, 0x25, 0, 0, 0 },
		{ "IBV_WR_ATOMIC_CMP_AND_SWP, match", 0, 1, 0x1111222233334444ull, 0x1111222233334444ull, ~0ull,
		  0x5555666677778888ull, ~0ull },
		{ "IBV_WR_ATOMIC_CMP_AND_SWP, no match", 0, 1, 0x1111222233334444ull, 0x1111222233334445ull, ~0ull,
		  0x5555666677778888ull, ~0ull },
	};
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		*target = cases[i].original;
		*result = 0;
		uint64_t wr_id = 0xa100 + i;
		if (cases[i].masked) {
			struct rnicdv_masked_atomic_wr m = {
				.wr_id = wr_id, .sge = rsge, .remote_addr = remote, .rkey = b_mr->rkey,
				.send_flags = IBV_SEND_SIGNALED, .compare_add = cases[i].compare_add,
				.compare_add_mask = cases[i].compare_add_mask, .swap = cases[i].swap,
				.swap_mask = cases[i].swap_mask,
			};
			int e = cases[i].cmp ? rnicdv_post_masked_cmp_swap(qa, &m) : rnicdv_post_masked_fetch_add(qa, &m);
			CHECK(e == 0, "%s: %s", cases[i].name, strerror(e));
		} else {
			post_atomic(qa, cases[i].cmp ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD, &rsge,
				    remote, b_mr->rkey, cases[i].compare_add, cases[i].swap, wr_id);
		}
		expect_success(wait_one(cq_a, cases[i].name), cases[i].cmp ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, wr_id,
			       cases[i].name);
		uint64_t want = cases[i].cmp ? rfc_masked_cmp_swap(cases[i].original, cases[i].compare_add,
								   cases[i].compare_add_mask, cases[i].swap,
								   cases[i].swap_mask)
					     : rfc_masked_fetch_add(cases[i].original, cases[i].compare_add,
								    cases[i].compare_add_mask);
		CHECK(*result == cases[i].original, "%s: returned 0x%016" PRIx64 ", not 0x%016" PRIx64, cases[i].name,
		      *result, cases[i].original);
		CHECK(*target == want, "%s: target 0x%016" PRIx64 ", not 0x%016" PRIx64, cases[i].name, *target, want);
		printf("ok: %s: original 0x%016" PRIx64 " returned, target 0x%016" PRIx64 "\n", cases[i].name, *result,
		       *target);
	}

	/* SGE lists: a Send gathered from three pieces of A (one of them empty) into a receive
	 * scattered over two pieces of B, the second filled only in part. */
	uint8_t want[BUF_LEN];
	memcpy(want, b_buf, BUF_LEN);
	struct ibv_sge gather[3] = {
		{ .addr = (uintptr_t)(a_buf + 2600), .length = 100, .lkey = a_mr->lkey },
		{ .addr = (uintptr_t)(a_buf + 2700), .length = 0, .lkey = a_mr->lkey },
		{ .addr = (uintptr_t)(a_buf + 3000), .length = 200, .lkey = a_mr->lkey },
	};
	struct ibv_sge scatter[2] = {
		{ .addr = (uintptr_t)(b_buf + 3500), .length = 150, .lkey = b_mr->lkey },
		{ .addr = (uintptr_t)(b_buf + 2600), .length = 400, .lkey = b_mr->lkey },
	};
	memset(&rwr, 0, sizeof rwr);
	rwr.wr_id = 0xb5;
	rwr.sg_list = scatter;
	rwr.num_sge = 2;
	CHECK(ibv_post_recv(qb, &rwr, &bad_rwr) == 0, "post_recv of two SGEs");
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xa5;
	wr.sg_list = gather;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post Send of three SGEs");
	wc = wait_one(cq_b, "Send of three SGEs, receiver");
	expect_success(wc, IBV_WC_RECV, 0xb5, "Send of three SGEs, receiver");
	CHECK(wc.byte_len == 300, "received %u octets, not 300", wc.byte_len);
	expect_success(wait_one(cq_a, "Send of three SGEs, sender"), IBV_WC_SEND, 0xa5, "Send of three SGEs, sender");
	memcpy(want + 3500, a_buf + 2600, 100);
	memcpy(want + 3600, a_buf + 3000, 50);
	memcpy(want + 2600, a_buf + 3050, 150);
	for (int i = 0; i < BUF_LEN; i++)
		CHECK(b_buf[i] == want[i], "SGE lists: octet %d of B: 0x%02x, not 0x%02x", i, b_buf[i], want[i]);
	printf("ok: a Send gathered from three SGEs, received into two: every octet placed, none around touched\n");

	/* An RDMA Read into two sinks of A, unsignaled, then a signaled Read into one: once the
	 * second completes, the first has placed its octets too. */
	memcpy(want, a_buf, BUF_LEN);
	struct ibv_sge sinks[2] = {
		{ .addr = (uintptr_t)(a_buf + 3300), .length = 100, .lkey = a_mr->lkey },
		{ .addr = (uintptr_t)(a_buf + 3600), .length = 200, .lkey = a_mr->lkey },
	};
	struct ibv_sge last_sink = { .addr = (uintptr_t)(a_buf + 3900), .length = 50, .lkey = a_mr->lkey };
	struct ibv_send_wr reads[2];
	memset(reads, 0, sizeof reads);
	reads[0].wr_id = 0xa6;
	reads[0].sg_list = sinks;
	reads[0].num_sge = 2;
	reads[0].opcode = IBV_WR_RDMA_READ;
	reads[0].wr.rdma.remote_addr = (uintptr_t)(b_buf + 2590);
	reads[0].wr.rdma.rkey = b_mr->rkey;
	reads[0].next = &reads[1];
	reads[1] = reads[0];
	reads[1].next = NULL;
	reads[1].wr_id = 0xa7;
	reads[1].sg_list = &last_sink;
	reads[1].num_sge = 1;
	reads[1].send_flags = IBV_SEND_SIGNALED;
	reads[1].wr.rdma.remote_addr = (uintptr_t)(b_buf + 3500);
	CHECK(ibv_post_send(qa, reads, &bad) == 0, "post two Reads");
	expect_success(wait_one(cq_a, "Read after a Read of two sinks"), IBV_WC_RDMA_READ, 0xa7,
		       "Read after a Read of two sinks");
	memcpy(want + 3300, b_buf + 2590, 100);
	memcpy(want + 3600, b_buf + 2690, 200);
	memcpy(want + 3900, b_buf + 3500, 50);
	for (int i = 0; i < BUF_LEN; i++)
		CHECK(a_buf[i] == want[i], "Read into two sinks: octet %d of A: 0x%02x, not 0x%02x", i, a_buf[i],
		      want[i]);
	printf("ok: an unsignaled RDMA Read into two sinks: placed when the next completion came, none around touched\n");

	/* Inline data: the program's buffer is copied at post (it is reused at once) and needs
	 * no lkey. A Write's completion at its sender says the buffer may be reused, not that
	 * the octets are placed at the peer (RFC 5040): the immediate that follows it, when B
	 * receives it, does. */
	memcpy(want, b_buf, BUF_LEN);
	memset(&rwr, 0, sizeof rwr);
	rwr.wr_id = 0xb8;
	CHECK(ibv_post_recv(qb, &rwr, &bad_rwr) == 0, "post_recv for the inline Write's immediate");
	uint8_t octets[40];
	for (int i = 0; i < 40; i++)
		octets[i] = (uint8_t)(i ^ 0x5a);
	memcpy(want + 3950, octets, 40);
	struct ibv_sge inline_sge = { .addr = (uintptr_t)octets, .length = 40, .lkey = 0xdeadbeef };
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xa8;
	wr.sg_list = &inline_sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(0xa8);
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = (uintptr_t)(b_buf + 3950);
	wr.wr.rdma.rkey = b_mr->rkey;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post an inline Write");
	memset(octets, 0, sizeof octets);
	expect_success(wait_one(cq_a, "inline Write"), IBV_WC_RDMA_WRITE, 0xa8, "inline Write");
	expect_success(wait_one(cq_b, "inline Write, receiver"), IBV_WC_RECV_RDMA_WITH_IMM, 0xb8,
		       "inline Write, receiver");
	for (int i = 0; i < BUF_LEN; i++)
		CHECK(b_buf[i] == want[i], "inline Write: octet %d of B: 0x%02x, not 0x%02x", i, b_buf[i], want[i]);
	printf("ok: an inline RDMA Write with Immediate of 40 octets: copied at post, placed exactly\n");

	/* Bad use. */
	gather[2].lkey = a_mr->lkey ^ 0x100;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xdead;
	wr.sg_list = gather;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	bad = NULL;
	int le = ibv_post_send(qa, &wr, &bad);
	CHECK(le == EINVAL && bad == &wr, "a bad lkey in a list: %s, bad_wr %p", strerror(le), (void *)bad);
	struct ibv_wc nothing;
	CHECK(ibv_poll_cq(cq_a, 1, &nothing) == 0, "a refused list completed");
	printf("ok: an SGE list with an unregistered lkey in its third entry is EINVAL with bad_wr set\n");
	struct ibv_sge bogus = { .addr = (uintptr_t)a_buf, .length = 16, .lkey = a_mr->lkey ^ 0x100 };
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xdead;
	wr.sg_list = &bogus;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	bad = NULL;
	int e = ibv_post_send(qa, &wr, &bad);
	CHECK(e == EINVAL && bad == &wr, "unregistered lkey: %s, bad_wr %p", strerror(e), (void *)bad);
	struct ibv_wc none;
	CHECK(ibv_poll_cq(cq_a, 1, &none) == 0, "a refused request completed");
	printf("ok: an unregistered lkey is EINVAL with bad_wr set, and nothing completes\n");
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "ibv_dealloc_pd of a PD in use");
	CHECK(ibv_destroy_cq(cq_a) == EBUSY, "ibv_destroy_cq of a CQ in use");
	CHECK(ibv_destroy_comp_channel(channel) == EBUSY, "ibv_destroy_comp_channel of a channel in use");
	printf("ok: a PD, CQ and channel in use are EBUSY to destroy\n");
	to_state(qa, IBV_QPS_ERR, 0);
	sge.length = 64;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xf1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	CHECK(ibv_post_send(qa, &wr, &bad) == 0, "post to a QP in ERROR");
	wc = wait_one(cq_a, "Send on a QP in ERROR");
	CHECK(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 0xf1, "Send on a QP in ERROR: %s",
	      ibv_wc_status_str(wc.status));
	printf("ok: a Send posted to a QP in ERROR completes with IBV_WC_WR_FLUSH_ERR\n");

	/* A CQ overrun: eight completions into a CQ of four, never polled, is IBV_EVENT_CQ_ERR
	 * on the context's asynchronous event fd. */
	struct ibv_cq *small = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	CHECK(small && small->cqe == 4, "a CQ of 4 entries");
	init.send_cq = small;
	init.recv_cq = cq_b;
	struct ibv_qp *qc = ibv_create_qp(pd, &init);
	init.send_cq = cq_b;
	struct ibv_qp *qd = ibv_create_qp(pd, &init);
	CHECK(qc && qd, "QPs on the small CQ");
	to_state(qc, IBV_QPS_INIT, 0);
	to_state(qd, IBV_QPS_INIT, 0);
	to_state(qc, IBV_QPS_RTR, qd->qp_num);
	to_state(qd, IBV_QPS_RTR, qc->qp_num);
	to_state(qc, IBV_QPS_RTS, 0);
	to_state(qd, IBV_QPS_RTS, 0);
	for (int i = 0; i < 8; i++) {
		memset(&rwr, 0, sizeof rwr);
		rwr.wr_id = 0xd0 + i;
		CHECK(ibv_post_recv(qd, &rwr, &bad_rwr) == 0, "post_recv %d", i);
		memset(&wr, 0, sizeof wr);
		wr.wr_id = 0xc0 + i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(qc, &wr, &bad) == 0, "zero-length Send %d", i);
	}
	struct pollfd afd = { .fd = ctx->async_fd, .events = POLLIN };
	CHECK(poll(&afd, 1, EVENT_WAIT_MS) == 1, "no asynchronous event within %d ms", EVENT_WAIT_MS);
	struct ibv_async_event aev;
	CHECK(ibv_get_async_event(ctx, &aev) == 0, "ibv_get_async_event");
	CHECK(aev.event_type == IBV_EVENT_CQ_ERR && aev.element.cq == small, "event %d for %p", aev.event_type,
	      (void *)aev.element.cq);
	ibv_ack_async_event(&aev);
	for (int i = 0; i < 8; i++)
		expect_success(wait_one(cq_b, "receive on the peer of the small CQ"), IBV_WC_RECV, 0xd0 + i,
			       "receive on the peer of the small CQ");
	CHECK(ibv_destroy_qp(qc) == 0 && ibv_destroy_qp(qd) == 0 && ibv_destroy_cq(small) == 0, "destroy");
	printf("ok: eight completions into a CQ of four: IBV_EVENT_CQ_ERR for that CQ on the async fd\n");

	CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0, "ibv_destroy_qp");
	CHECK(ibv_dereg_mr(a_mr) == 0 && ibv_dereg_mr(b_mr) == 0, "ibv_dereg_mr");
	CHECK(ibv_destroy_cq(cq_a) == 0 && ibv_destroy_cq(cq_b) == 0, "ibv_destroy_cq");
	CHECK(ibv_destroy_comp_channel(channel) == 0, "ibv_destroy_comp_channel");
	CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");
	printf("ok: every object destroyed\n");

	/* Destroyed objects passed again: EINVAL (a negative count from ibv_poll_cq), never a
	 * crash or a use of freed memory. */
	memset(&wr, 0, sizeof wr);
	wr.wr_id = 0xd1;
	wr.opcode = IBV_WR_SEND;
	bad = NULL;
	e = ibv_post_send(qa, &wr, &bad);
	CHECK(e == EINVAL && bad == &wr, "post_send on a destroyed QP: %s, bad_wr %p", strerror(e), (void *)bad);
	memset(&rwr, 0, sizeof rwr);
	bad_rwr = NULL;
	e = ibv_post_recv(qb, &rwr, &bad_rwr);
	CHECK(e == EINVAL && bad_rwr == &rwr, "post_recv on a destroyed QP: %s", strerror(e));
	struct ibv_qp_attr dead_attr = { .qp_state = IBV_QPS_ERR };
	CHECK(ibv_modify_qp(qa, &dead_attr, IBV_QP_STATE) == EINVAL, "modify_qp on a destroyed QP");
	CHECK(ibv_destroy_qp(qa) == EINVAL, "ibv_destroy_qp twice");
	CHECK(ibv_dereg_mr(a_mr) == EINVAL, "ibv_dereg_mr twice");
	CHECK(ibv_poll_cq(cq_a, 1, &wc) == -EINVAL, "poll_cq on a destroyed CQ");
	CHECK(ibv_req_notify_cq(cq_b, 0) == EINVAL, "req_notify_cq on a destroyed CQ");
	CHECK(ibv_destroy_cq(cq_a) == EINVAL, "ibv_destroy_cq twice");
	CHECK(ibv_destroy_comp_channel(channel) == EINVAL, "ibv_destroy_comp_channel twice");
	errno = 0;
	CHECK(!ibv_reg_mr(pd, a_buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL,
	      "reg_mr on a deallocated PD: %s", strerror(errno));
	CHECK(ibv_dealloc_pd(pd) == EINVAL, "ibv_dealloc_pd twice");
	printf("ok: destroyed QP, MR, CQ, channel and PD passed again are EINVAL\n");

	/* Closing the device frees what is left; those objects, and the context, are EINVAL. */
	pd = ibv_alloc_pd(ctx);
	struct ibv_cq *left_cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	CHECK(pd && left_cq, "objects left for close");
	init.send_cq = left_cq;
	init.recv_cq = left_cq;
	struct ibv_qp *left_qp = ibv_create_qp(pd, &init);
	CHECK(left_qp, "a QP left for close");
	CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
	CHECK(ibv_post_send(left_qp, &wr, &bad) == EINVAL, "post_send on a QP of a closed device");
	CHECK(ibv_poll_cq(left_cq, 1, &wc) == -EINVAL, "poll_cq on a CQ of a closed device");
	CHECK(ibv_destroy_qp(left_qp) == EINVAL, "destroy_qp on a closed device");
	errno = 0;
	CHECK(!ibv_alloc_pd(ctx) && errno == EINVAL, "alloc_pd on a closed device: %s", strerror(errno));
	CHECK(ibv_close_device(ctx) == EINVAL, "ibv_close_device twice");
	free(a_buf - 8);
	free(b_buf - 8);
	printf("ok: the device closed; its objects left over and the context itself are EINVAL\n");
	return 0;
}
