/*
 * Consumer groups: subscribe, rebalance callbacks served by poll, commit of stored offsets,
 * committed offsets, and a second member of the group resuming where the first committed; on
 * the classic protocol and on KIP-848's consumer protocol (group.protocol=consumer).
 * Asynchronous commits and the offset commit callback.
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

/* What the offset commit callback saw, call by call (the last call's partitions). */
struct commits {
    int calls;
    odk_err_t err;
    size_t cnt;
    int32_t partition[PARTITIONS + 1];
    int64_t offset[PARTITIONS + 1];
    int32_t item_err[PARTITIONS + 1];
    char topic[128];
};

static void on_commit(odk_consumer_t *c, odk_err_t err, const odk_topic_partition_t *offsets,
                      size_t cnt, void *opaque) {
    struct commits *r = opaque;
    CHECK(c != NULL && odk_consumer_opaque(c) == opaque);
    CHECK(cnt <= PARTITIONS + 1, "%zu partitions", cnt);
    CHECK((cnt == 0) == (offsets == NULL));
    r->calls++;
    r->err = err;
    r->cnt = cnt;
    for (size_t i = 0; i < cnt; i++) {
        CHECK(offsets[i].topic != NULL);
        snprintf(r->topic, sizeof r->topic, "%s", offsets[i].topic);
        r->partition[i] = offsets[i].partition;
        r->offset[i] = offsets[i].offset;
        r->item_err[i] = offsets[i].err;
    }
}

/* Polls until the commit callback ran `calls` times in all; no record may arrive meanwhile. */
static void serve_commits(odk_consumer_t *c, struct commits *r, int calls) {
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (r->calls < calls && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 100);
        CHECK(m == NULL, "unexpected message: offset %lld, %s", (long long)odk_message_offset(m),
              odk_message_errstr(m));
    }
    CHECK(r->calls == calls, "commit callback ran %d times, not %d", r->calls, calls);
}

/* The offset of partition `p` in the callback's last list (-77 when absent). */
static int64_t reported(const struct commits *r, int32_t p) {
    for (size_t i = 0; i < r->cnt; i++) {
        if (r->partition[i] == p) return r->offset[i];
    }
    return -77;
}

static void async_commits_report_to_the_commit_callback(void) {
    char topic[128], group[128], errstr[512];
    unique_name(topic, sizeof topic, "c-commit-cb");
    unique_name(group, sizeof group, "c-commit-cb-id");
    create_topic(topic, PARTITIONS);
    produce(topic);

    struct commits r;
    memset(&r, 0, sizeof r);
    odk_conf_t *conf = test_conf("group.id", group, "auto.offset.reset", "earliest",
                                 "enable.auto.commit", "false", NULL);
    odk_conf_set_offset_commit_cb(conf, on_commit);
    odk_conf_set_opaque(conf, &r);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    const char *topics[] = {topic};
    CHECK_OK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr), errstr);
    int seen[COUNT] = {0};
    CHECK(consume(c, COUNT, seen) == COUNT);

    /* The stored offsets, committed in the background; the callback runs inside poll. */
    CHECK_OK(odk_consumer_commit_async(c, NULL, 0, errstr, sizeof errstr), errstr);
    CHECK(r.calls == 0, "the callback ran outside odk_consumer_poll");
    serve_commits(c, &r, 1);
    CHECK(r.err == ODK_ERR_NO_ERROR, "%s", odk_err_name(r.err));
    CHECK(r.cnt == PARTITIONS && strcmp(r.topic, topic) == 0, "%zu partitions of %s", r.cnt, r.topic);
    for (int p = 0; p < PARTITIONS; p++) {
        CHECK(reported(&r, p) == COUNT / PARTITIONS, "partition %d reported at %lld", p, (long long)reported(&r, p));
        CHECK(r.item_err[p] == 0);
    }
    odk_topic_partition_t committed[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) committed[i] = (odk_topic_partition_t){topic, i, -77, -77};
    CHECK_OK(odk_consumer_committed(c, committed, PARTITIONS, DEADLINE_MS), "committed");
    for (int i = 0; i < PARTITIONS; i++) CHECK(committed[i].offset == COUNT / PARTITIONS);

    /* Nothing new stored: scheduled all the same, and reported as _NO_OFFSET, as librdkafka does. */
    CHECK_OK(odk_consumer_commit_async(c, NULL, 0, errstr, sizeof errstr), errstr);
    serve_commits(c, &r, 2);
    CHECK(r.err == ODK_ERR__NO_OFFSET && r.cnt == 0, "%s, %zu partitions", odk_err_name(r.err), r.cnt);

    /* Explicit offsets: exactly those. */
    odk_topic_partition_t explicit = {topic, 0, 5, -77};
    CHECK_OK(odk_consumer_commit_async(c, &explicit, 1, errstr, sizeof errstr), errstr);
    serve_commits(c, &r, 3);
    CHECK(r.err == ODK_ERR_NO_ERROR && r.cnt == 1 && reported(&r, 0) == 5, "%s, %zu", odk_err_name(r.err), r.cnt);
    committed[0].offset = -77;
    CHECK_OK(odk_consumer_committed(c, committed, 1, DEADLINE_MS), "committed");
    CHECK(committed[0].offset == 5, "committed at %lld", (long long)committed[0].offset);

    /* A synchronous commit returns its result and reports it to the callback on the next poll. */
    explicit = (odk_topic_partition_t){topic, 1, 7, -77};
    CHECK_OK(odk_consumer_commit(c, &explicit, 1, errstr, sizeof errstr), errstr);
    CHECK(r.calls == 3);
    serve_commits(c, &r, 4);
    CHECK(r.err == ODK_ERR_NO_ERROR && r.cnt == 1 && reported(&r, 1) == 7);
    /* The stored offsets differ from the last commits again: both are sent, then nothing is. */
    CHECK_OK(odk_consumer_commit(c, NULL, 0, errstr, sizeof errstr), errstr);
    serve_commits(c, &r, 5);
    CHECK(r.err == ODK_ERR_NO_ERROR && r.cnt == PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++) CHECK(reported(&r, p) == COUNT / PARTITIONS);
    CHECK(odk_consumer_commit(c, NULL, 0, errstr, sizeof errstr) == ODK_ERR__NO_OFFSET);
    serve_commits(c, &r, 6);
    CHECK(r.err == ODK_ERR__NO_OFFSET && r.cnt == 0);

    /* A message's offset + 1 (partition 0's last record: nothing follows it). */
    CHECK_OK(odk_consumer_seek(c, topic, 0, COUNT / PARTITIONS - 1, errstr, sizeof errstr), errstr);
    odk_message_t *m = NULL;
    for (int64_t deadline = now_ms() + DEADLINE_MS; !m && now_ms() < deadline;) m = odk_consumer_poll(c, 100);
    CHECK(m != NULL && odk_message_err(m) == ODK_ERR_NO_ERROR && odk_message_offset(m) == COUNT / PARTITIONS - 1);
    CHECK_OK(odk_consumer_commit_message_async(c, m, errstr, sizeof errstr), errstr);
    odk_message_destroy(m);
    serve_commits(c, &r, 7);
    CHECK(r.err == ODK_ERR_NO_ERROR && r.cnt == 1 && reported(&r, 0) == COUNT / PARTITIONS, "%s", odk_err_name(r.err));

    /* A partition the broker refuses: the request's error and the item's own. */
    explicit = (odk_topic_partition_t){"c-commit-cb-no-such-topic", 0, 1, -77};
    CHECK_OK(odk_consumer_commit_async(c, &explicit, 1, errstr, sizeof errstr), errstr);
    serve_commits(c, &r, 8);
    CHECK(r.err != ODK_ERR_NO_ERROR && r.cnt == 1 && r.item_err[0] == (int32_t)r.err,
          "%s, %zu partitions, item %d", odk_err_name(r.err), r.cnt, r.cnt ? r.item_err[0] : 0);

    /* Bad arguments fail at once and report nothing. */
    CHECK(odk_consumer_commit_async(NULL, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_commit_async(c, NULL, 2, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_commit_message_async(c, NULL, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_poll(c, 300) == NULL);
    CHECK(r.calls == 8, "%d calls", r.calls);

    CHECK_OK(odk_consumer_close(c), "close");
    CHECK(odk_consumer_commit_async(c, NULL, 0, errstr, sizeof errstr) == ODK_ERR__STATE);
    odk_consumer_destroy(c);
    CHECK(r.calls == 8, "%d calls", r.calls);
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
    RUN(async_commits_report_to_the_commit_callback);
    RUN(classic_settings_are_refused_with_the_consumer_protocol);
    return 0;
}
