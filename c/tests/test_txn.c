/*
 * Transactions: a committed transaction is visible to read_committed consumers, an aborted
 * one is not; wrong-state calls report their error class.
 */
#include "harness.h"

#define COMMITTED 10
#define ABORTED 5

static int reports_ok, reports_failed;

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p; (void)opaque;
    if (odk_message_err(m) == ODK_ERR_NO_ERROR) reports_ok++; else reports_failed++;
}

static void produce_n(odk_producer_t *p, const char *topic, const char *prefix, int n) {
    for (int i = 0; i < n; i++) {
        char value[32];
        int len = snprintf(value, sizeof value, "%s-%d", prefix, i);
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, value, (size_t)len, NULL, 0, 0, NULL), "produce");
    }
}

static void commit_and_abort(void) {
    char topic[128], txn_id[128], errstr[512];
    unique_name(topic, sizeof topic, "c-txn");
    unique_name(txn_id, sizeof txn_id, "c-txn-id");
    create_topic(topic, 1);

    odk_conf_t *conf = test_conf("transactional.id", txn_id, NULL);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);

    uint32_t flags = 99;
    /* Not initialised yet: a state error, not retriable. */
    CHECK(odk_producer_begin_transaction(p, &flags, errstr, sizeof errstr) != ODK_ERR_NO_ERROR);
    CHECK(!(flags & ODK_ERR_F_RETRIABLE), "flags %u", flags);

    CHECK_OK(odk_producer_init_transactions(p, DEADLINE_MS, &flags, errstr, sizeof errstr), errstr);
    CHECK(flags == 0);
    CHECK_OK(odk_producer_begin_transaction(p, &flags, errstr, sizeof errstr), errstr);
    produce_n(p, topic, "committed", COMMITTED);
    CHECK_OK(odk_producer_commit_transaction(p, DEADLINE_MS, &flags, errstr, sizeof errstr), errstr);
    odk_poll(p, 0);

    /* Offsets of a consumer group committed with the transaction. */
    char group[128];
    unique_name(group, sizeof group, "c-txn-group");
    conf = test_conf("group.id", group, NULL);
    odk_consumer_t *grouped = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(grouped != NULL, "%s", errstr);
    conf = test_conf(NULL);
    odk_consumer_t *ungrouped = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(ungrouped != NULL, "%s", errstr);
    odk_topic_partition_t offsets = {topic, 0, 7, 0};
    CHECK_OK(odk_producer_begin_transaction(p, NULL, errstr, sizeof errstr), errstr);
    CHECK(odk_producer_send_offsets_to_transaction(p, &offsets, 1, ungrouped, &flags, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG, "a consumer without group.id");
    CHECK_OK(odk_producer_send_offsets_to_transaction(p, &offsets, 1, grouped, &flags, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_producer_commit_transaction(p, DEADLINE_MS, &flags, errstr, sizeof errstr), errstr);
    odk_topic_partition_t committed_offset = {topic, 0, -77, -77};
    CHECK_OK(odk_consumer_committed(grouped, &committed_offset, 1, DEADLINE_MS), "committed");
    CHECK(committed_offset.offset == 7, "committed %lld", (long long)committed_offset.offset);
    odk_consumer_destroy(ungrouped);
    odk_consumer_destroy(grouped);

    CHECK_OK(odk_producer_begin_transaction(p, NULL, errstr, sizeof errstr), errstr);
    produce_n(p, topic, "aborted", ABORTED);
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK_OK(odk_producer_abort_transaction(p, DEADLINE_MS, &flags, errstr, sizeof errstr), errstr);
    CHECK(odk_producer_commit_transaction(p, DEADLINE_MS, &flags, errstr, sizeof errstr) != ODK_ERR_NO_ERROR,
          "commit without an open transaction");
    CHECK(odk_producer_commit_transaction(NULL, 0, &flags, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports_ok + reports_failed == COMMITTED + ABORTED, "%d + %d reports", reports_ok, reports_failed);
    odk_producer_destroy(p);

    /* read_committed sees the committed records and then the end of the partition. */
    conf = test_conf("isolation.level", "read_committed", "enable.partition.eof", "true", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    odk_topic_partition_t tp = {topic, 0, ODK_OFFSET_BEGINNING, 0};
    CHECK_OK(odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr), errstr);
    int committed = 0, aborted = 0, eof = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (!eof && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (!m) continue;
        if (odk_message_err(m) == ODK_ERR__PARTITION_EOF) {
            eof = 1;
        } else {
            CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
            size_t len;
            const char *v = odk_message_value(m, &len);
            if (len > 9 && memcmp(v, "committed", 9) == 0) committed++;
            else aborted++;
        }
        odk_message_destroy(m);
    }
    CHECK(eof && committed == COMMITTED && aborted == 0, "eof %d, %d committed, %d aborted records read",
          eof, committed, aborted);
    odk_consumer_destroy(c);
}

int main(void) {
    RUN(commit_and_abort);
    return 0;
}
