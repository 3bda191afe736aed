/*
 * Consumer groups: subscribe, rebalance callbacks served by poll, commit of stored offsets,
 * committed offsets, and a second member of the group resuming where the first committed; on
 * the classic protocol and on KIP-848's consumer protocol (group.protocol=consumer).
 */
#include "harness.h"

#define PARTITIONS 2
#define COUNT 40

struct rebalances {
    int assigned;
    int revoked;
    size_t last_cnt;
};

static void on_rebalance(odk_consumer_t *c, odk_err_t event, const odk_topic_partition_t *parts,
                         size_t cnt, void *opaque) {
    struct rebalances *r = opaque;
    CHECK(c != NULL && odk_consumer_opaque(c) == opaque);
    for (size_t i = 0; i < cnt; i++) CHECK(parts[i].topic != NULL && parts[i].partition >= 0);
    if (event == ODK_ERR__ASSIGN_PARTITIONS) {
        r->assigned++;
        r->last_cnt = cnt;
    } else {
        CHECK(event == ODK_ERR__REVOKE_PARTITIONS || event == ODK_ERR__ASSIGNMENT_LOST);
        r->revoked++;
    }
}

static void produce(const char *topic) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    for (int i = 0; i < COUNT; i++) {
        char value[32];
        int n = snprintf(value, sizeof value, "v%d", i);
        CHECK_OK(odk_produce(p, topic, i % PARTITIONS, NULL, 0, value, (size_t)n, NULL, 0, 0, NULL), "produce");
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    odk_producer_destroy(p);
}

static const char *protocol = "classic";

static odk_consumer_t *member(const char *group, struct rebalances *r) {
    char errstr[512];
    odk_conf_t *conf = test_conf("group.id", group, "auto.offset.reset", "earliest",
                                 "enable.auto.commit", "false", "group.protocol", protocol, NULL);
    odk_conf_set_rebalance_cb(conf, on_rebalance);
    odk_conf_set_opaque(conf, r);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    return c;
}

/* Polls until `want` records arrived; returns their "vN" numbers in `seen`. */
static int consume(odk_consumer_t *c, int want, int *seen) {
    int got = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (got < want && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (!m) continue;
        CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
        size_t len;
        const char *v = odk_message_value(m, &len);
        char buf[16];
        CHECK(v && len > 1 && len < sizeof buf);
        memcpy(buf, v, len);
        buf[len] = '\0';
        seen[atoi(buf + 1)]++;
        got++;
        odk_message_destroy(m);
    }
    return got;
}

static void members_resume_from_commits(void) {
    char topic[128], group[128], errstr[512];
    unique_name(topic, sizeof topic, "c-group");
    unique_name(group, sizeof group, "c-group-id");
    create_topic(topic, PARTITIONS);
    produce(topic);

    int seen[COUNT] = {0};
    struct rebalances r1 = {0, 0, 0};
    odk_consumer_t *c1 = member(group, &r1);
    const char *topics[] = {topic};
    CHECK_OK(odk_consumer_subscribe(c1, topics, 1, errstr, sizeof errstr), errstr);
    int first = consume(c1, COUNT / 2, seen);
    CHECK(first == COUNT / 2, "first member got %d", first);
    CHECK(r1.assigned == 1 && r1.last_cnt == PARTITIONS, "assigned %d times, %zu partitions", r1.assigned, r1.last_cnt);

    /* Commit what poll returned (the stored offsets), then read them back. */
    CHECK_OK(odk_consumer_commit(c1, NULL, 0, errstr, sizeof errstr), errstr);
    CHECK(odk_consumer_commit(c1, NULL, 0, errstr, sizeof errstr) == ODK_ERR__NO_OFFSET, "nothing new to commit");
    odk_topic_partition_t committed[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) committed[i] = (odk_topic_partition_t){topic, i, -77, -77};
    CHECK_OK(odk_consumer_committed(c1, committed, PARTITIONS, DEADLINE_MS), "committed");
    int64_t sum = 0;
    for (int i = 0; i < PARTITIONS; i++) {
        CHECK(committed[i].err == 0);
        if (committed[i].offset != ODK_OFFSET_INVALID) sum += committed[i].offset;
    }
    CHECK(sum == COUNT / 2, "committed offsets add up to %lld", (long long)sum);
    CHECK_OK(odk_consumer_close(c1), "close");
    CHECK(r1.revoked == 1, "revoked %d times", r1.revoked);
    odk_consumer_destroy(c1);

    /* A new member of the same group starts at the committed offsets: no record twice. */
    struct rebalances r2 = {0, 0, 0};
    odk_consumer_t *c2 = member(group, &r2);
    CHECK_OK(odk_consumer_subscribe(c2, topics, 1, errstr, sizeof errstr), errstr);
    int second = consume(c2, COUNT - first, seen);
    CHECK(second == COUNT - first, "second member got %d", second);
    for (int i = 0; i < COUNT; i++) CHECK(seen[i] == 1, "record v%d seen %d times", i, seen[i]);
    odk_message_t *extra = odk_consumer_poll(c2, 300);
    CHECK(extra == NULL, "no record beyond the %d produced", COUNT);

    /* Commit one message explicitly: its offset + 1. */
    odk_topic_partition_t tp = {topic, 0, -77, -77};
    CHECK_OK(odk_consumer_commit(c2, NULL, 0, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_consumer_committed(c2, &tp, 1, DEADLINE_MS), "committed");
    CHECK(tp.offset == COUNT / PARTITIONS, "partition 0 committed at %lld", (long long)tp.offset);
    odk_consumer_destroy(c2); /* closes: leaves the group */
    CHECK(r2.revoked == 1);
}

static void consumer_protocol_members_resume_from_commits(void) {
    protocol = "consumer";
    members_resume_from_commits();
    protocol = "classic";
}

/* Classic-protocol settings are refused with the consumer protocol, naming them. */
static void classic_settings_are_refused_with_the_consumer_protocol(void) {
    char errstr[512];
    odk_conf_t *conf = test_conf("group.id", "g", "group.protocol", "consumer",
                                 "session.timeout.ms", "10000", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c == NULL, "created");
    CHECK(strstr(errstr, "session.timeout.ms") != NULL, "%s", errstr);
}

int main(void) {
    RUN(members_resume_from_commits);
    RUN(consumer_protocol_members_resume_from_commits);
    RUN(classic_settings_are_refused_with_the_consumer_protocol);
    return 0;
}
