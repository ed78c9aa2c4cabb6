/* Verbs from several threads at once, as libibverbs promises they may be called: two
 * threads each run Sends over their own pair of RC QPs (its own CQs, its own buffers) and
 * check every message, while a third thread allocates and frees PDs, registers and
 * deregisters MRs and queries the device, all on one context of the RNIC's libibverbs
 * (verbs/tests/c_programs.rs builds and runs it).
 *
 * Prints one "ok:" line per thread and exits 0, or prints "FAIL:" and exits 1. Every wait
 * is bounded. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include "verbs_test.h"

#define MESSAGES 100
#define MSG_LEN 256
#define CHURN 50


static struct ibv_context *ctx;
static struct ibv_pd *pd;

/* One thread's pair: A sends MESSAGES messages to B, each checked as it arrives. */
static void *sender(void *arg)
{
	int who = (int)(intptr_t)arg;
	struct ibv_cq *cq_a = ibv_create_cq(ctx, 16, NULL, NULL, 0), *cq_b = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(cq_a && cq_b, "thread %d: ibv_create_cq: %s", who, strerror(errno));
	uint8_t *out = malloc(MSG_LEN), *in = malloc(MSG_LEN);
	CHECK(out && in, "malloc");
	struct ibv_mr *out_mr = ibv_reg_mr(pd, out, MSG_LEN, 0);
	struct ibv_mr *in_mr = ibv_reg_mr(pd, in, MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(out_mr && in_mr, "thread %d: ibv_reg_mr: %s", who, strerror(errno));
	struct ibv_qp_init_attr init;
	memset(&init, 0, sizeof init);
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 4;
	init.cap.max_recv_wr = 4;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.send_cq = init.recv_cq = cq_a;
	struct ibv_qp *a = ibv_create_qp(pd, &init);
	init.send_cq = init.recv_cq = cq_b;
	struct ibv_qp *b = ibv_create_qp(pd, &init);
	CHECK(a && b, "thread %d: ibv_create_qp: %s", who, strerror(errno));
	to_state(a, IBV_QPS_INIT, 0);
	to_state(b, IBV_QPS_INIT, 0);
	to_state(a, IBV_QPS_RTR, b->qp_num);
	to_state(b, IBV_QPS_RTR, a->qp_num);
	to_state(a, IBV_QPS_RTS, 0);
	to_state(b, IBV_QPS_RTS, 0);
	for (int m = 0; m < MESSAGES; m++) {
		for (int i = 0; i < MSG_LEN; i++)
			out[i] = (uint8_t)(who * 101 + m * 7 + i);
		memset(in, 0, MSG_LEN);
		struct ibv_sge rsge = { .addr = (uintptr_t)in, .length = MSG_LEN, .lkey = in_mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 0x1000 + m, .sg_list = &rsge, .num_sge = 1 }, *bad_rwr;
		CHECK(ibv_post_recv(b, &rwr, &bad_rwr) == 0, "thread %d: post_recv %d", who, m);
		struct ibv_sge sge = { .addr = (uintptr_t)out, .length = MSG_LEN, .lkey = out_mr->lkey };
		struct ibv_send_wr wr, *bad;
		memset(&wr, 0, sizeof wr);
		wr.wr_id = 0x2000 + m;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK(ibv_post_send(a, &wr, &bad) == 0, "thread %d: post_send %d", who, m);
		char what[32];
		snprintf(what, sizeof what, "thread %d, message %d", who, m);
		struct ibv_wc wc = wait_one(cq_b, what);
		expect_success(wc, IBV_WC_RECV, 0x1000 + m, what);
		CHECK(wc.byte_len == MSG_LEN, "%s: %u octets received", what, wc.byte_len);
		expect_success(wait_one(cq_a, what), IBV_WC_SEND, 0x2000 + m, what);
		CHECK(memcmp(in, out, MSG_LEN) == 0, "thread %d: message %d differs", who, m);
	}
	CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "thread %d: ibv_destroy_qp", who);
	CHECK(ibv_dereg_mr(out_mr) == 0 && ibv_dereg_mr(in_mr) == 0, "thread %d: ibv_dereg_mr", who);
	CHECK(ibv_destroy_cq(cq_a) == 0 && ibv_destroy_cq(cq_b) == 0, "thread %d: ibv_destroy_cq", who);
	free(out);
	free(in);
	printf("ok: thread %d: %d Sends of %d octets over its own QPs, every one checked\n", who, MESSAGES, MSG_LEN);
	return NULL;
}

/* Objects made and destroyed while the senders run. */
static void *churn(void *arg)
{
	(void)arg;
	uint8_t *buf = malloc(4096);
	CHECK(buf, "malloc");
	for (int i = 0; i < CHURN; i++) {
		struct ibv_device_attr attr;
		CHECK(ibv_query_device(ctx, &attr) == 0, "churn: ibv_query_device");
		struct ibv_pd *p = ibv_alloc_pd(ctx);
		CHECK(p, "churn: ibv_alloc_pd: %s", strerror(errno));
		struct ibv_mr *mr = ibv_reg_mr(p, buf + (i % 64), 1000, IBV_ACCESS_LOCAL_WRITE);
		CHECK(mr, "churn: ibv_reg_mr: %s", strerror(errno));
		CHECK(ibv_dereg_mr(mr) == 0 && ibv_dealloc_pd(p) == 0, "churn: free");
	}
	free(buf);
	printf("ok: churn: %d PDs and MRs made and freed beside the senders\n", CHURN);
	return NULL;
}

int main(void)
{
	int num = 0;
	struct ibv_device **list = ibv_get_device_list(&num);
	CHECK(list && num == 1, "one device expected, found %d", num);
	ctx = ibv_open_device(list[0]);
	CHECK(ctx, "ibv_open_device: %s", strerror(errno));
	ibv_free_device_list(list);
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
	pthread_t threads[3];
	CHECK(pthread_create(&threads[0], NULL, sender, (void *)1) == 0, "pthread_create");
	CHECK(pthread_create(&threads[1], NULL, sender, (void *)2) == 0, "pthread_create");
	CHECK(pthread_create(&threads[2], NULL, churn, NULL) == 0, "pthread_create");
	for (int i = 0; i < 3; i++)
		CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join");
	CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "close");
	return 0;
}
