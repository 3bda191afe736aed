/*
 * Produce and consume against a real broker: delivery reports (copied and ODK_MSG_F_FREE
 * values, keys, headers, null values, msg_opaque), assign / poll / seek / position /
 * watermarks, partition EOF events, produce-time errors, offsets looked up by timestamp, and
 * the partitioner callback.
 */
#include "harness.h"

#define PARTITIONS 3
#define COUNT 60

struct reports {
    int ok;
    int failed;
    int seen[COUNT];
    int64_t offsets[COUNT];
    int32_t partitions[COUNT];
};

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct reports *r = opaque;
    int *index = odk_message_opaque(m);
    CHECK(index != NULL && *index >= 0 && *index < COUNT);
    if (odk_message_err(m) != ODK_ERR_NO_ERROR) {
        fprintf(stderr, "delivery %d failed: %s\n", *index, odk_message_errstr(m));
        r->failed++;
        return;
    }
    r->ok++;
    if (r->seen[*index]++ > 0) return; /* the re-produced record 0 ("again") */
    r->offsets[*index] = odk_message_offset(m);
    r->partitions[*index] = odk_message_partition(m);
    /* The report carries the record's key and value. */
    size_t len = 0;
    const char *value = odk_message_value(m, &len);
    char want[32];
    int n = snprintf(want, sizeof want, "value-%d", *index);
    if (*index % 10 == 9) {
        CHECK(value == NULL && len == 0, "record %d has a null value", *index);
    } else {
        CHECK(value && len == (size_t)n && memcmp(value, want, len) == 0, "record %d value", *index);
    }
    CHECK(odk_message_topic(m) != NULL && strncmp(odk_message_topic(m), "c-pc-", 5) == 0);
    CHECK(odk_message_timestamp(m, NULL) > 0);
}

static int record_index(const odk_message_t *m) {
    size_t len = 0;
    const char *key = odk_message_key(m, &len);
    CHECK(key != NULL && len > 4 && len < 16 && memcmp(key, "key-", 4) == 0);
    char buf[16];
    memcpy(buf, key, len);
    buf[len] = '\0';
    return atoi(buf + 4);
}

static void check_record(const odk_message_t *m, int i) {
    size_t len = 0;
    const char *value = odk_message_value(m, &len);
    char want[32];
    int n = snprintf(want, sizeof want, "value-%d", i);
    if (i % 10 == 9) {
        CHECK(value == NULL, "record %d should have a null value", i);
    } else {
        CHECK(value && len == (size_t)n && memcmp(value, want, len) == 0, "record %d value", i);
    }
    if (i % 3 == 0 && i % 10 != 9) {
        CHECK(odk_message_header_count(m) == 2, "record %d headers", i);
        const void *name, *hv;
        size_t name_len, hv_len;
        CHECK_OK(odk_message_header_get(m, 0, &name, &name_len, &hv, &hv_len), "header 0");
        CHECK(name_len == 5 && memcmp(name, "trace", 5) == 0 && hv_len == 3 && memcmp(hv, "abc", 3) == 0);
        CHECK_OK(odk_message_header_get_last(m, "empty", &hv, &hv_len), "header empty");
        CHECK(hv == NULL && hv_len == 0, "null header value");
        CHECK(odk_message_header_get_last(m, "missing", &hv, &hv_len) == ODK_ERR__NOENT);
    } else {
        CHECK(odk_message_header_count(m) == 0);
    }
}

static void produce_then_consume(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-pc");
    create_topic(topic, PARTITIONS);

    static struct reports reports;
    static int indexes[COUNT];
    odk_conf_t *conf = test_conf("linger.ms", "5", NULL);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_conf_set_opaque(conf, &reports);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);

    odk_header_t headers[2] = {{"trace", "abc", 3}, {"empty", NULL, 0}};
    for (int i = 0; i < COUNT; i++) {
        indexes[i] = i;
        char key[16];
        int key_len = snprintf(key, sizeof key, "key-%d", i);
        char value[32];
        int value_len = snprintf(value, sizeof value, "value-%d", i);
        odk_err_t err;
        if (i % 10 == 9) {
            err = odk_produce(p, topic, ODK_PARTITION_ANY, key, (size_t)key_len, NULL, 0, NULL, 0,
                              ODK_MSG_F_COPY, &indexes[i]);
        } else if (i % 2 == 1) {
            /* The library takes the malloc'ed value and frees it. */
            char *owned = malloc((size_t)value_len);
            memcpy(owned, value, (size_t)value_len);
            err = odk_produce(p, topic, ODK_PARTITION_ANY, key, (size_t)key_len, owned,
                              (size_t)value_len, i % 3 == 0 ? headers : NULL, i % 3 == 0 ? 2 : 0,
                              ODK_MSG_F_FREE, &indexes[i]);
        } else {
            err = odk_produce(p, topic, ODK_PARTITION_ANY, key, (size_t)key_len, value,
                              (size_t)value_len, i % 3 == 0 ? headers : NULL, i % 3 == 0 ? 2 : 0, 0,
                              &indexes[i]);
            memset(value, 'X', sizeof value); /* copied: reusing the buffer is fine */
        }
        CHECK(err == ODK_ERR_NO_ERROR, "produce %d: %s", i, odk_err_name(err));
        odk_poll(p, 0);
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports.ok == COUNT && reports.failed == 0, "%d ok, %d failed", reports.ok, reports.failed);
    for (int i = 0; i < COUNT; i++) CHECK(reports.seen[i] == 1, "record %d reported %d times", i, reports.seen[i]);
    CHECK(odk_producer_outq_len(p) == 0);
    /* The same key always goes to the same partition. */
    CHECK_OK(odk_produce(p, topic, ODK_PARTITION_ANY, "key-0", 5, "again", 5, NULL, 0, 0, &indexes[0]), "");
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports.seen[0] == 2);

    /* A partition the topic does not have (its metadata is cached now). */
    odk_err_t bad = odk_produce(p, topic, PARTITIONS + 5, NULL, 0, "v", 1, NULL, 0, 0, &indexes[1]);
    CHECK(bad == ODK_ERR__UNKNOWN_PARTITION, "%s", odk_err_name(bad));
    odk_producer_destroy(p);

    /* Consume everything from the beginning of every partition. */
    conf = test_conf("enable.partition.eof", "true", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    odk_topic_partition_t assignment[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) {
        assignment[i] = (odk_topic_partition_t){topic, i, ODK_OFFSET_BEGINNING, 0};
    }
    CHECK_OK(odk_consumer_assign(c, assignment, PARTITIONS, errstr, sizeof errstr), errstr);
    odk_topic_partition_t *current = NULL;
    size_t current_cnt = 0;
    CHECK_OK(odk_consumer_assignment(c, &current, &current_cnt), "assignment");
    CHECK(current_cnt == PARTITIONS && strcmp(current[0].topic, topic) == 0);
    odk_topic_partitions_destroy(current, current_cnt);

    int got[COUNT] = {0};
    int records = 0, eofs = 0;
    int64_t last_offset[PARTITIONS] = {-1, -1, -1};
    int64_t deadline = now_ms() + DEADLINE_MS;
    while ((records < COUNT + 1 || eofs < PARTITIONS) && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (!m) continue;
        odk_err_t err = odk_message_err(m);
        if (err == ODK_ERR__PARTITION_EOF) {
            eofs++;
        } else {
            CHECK(err == ODK_ERR_NO_ERROR, "consume: %s", odk_message_errstr(m));
            int part = odk_message_partition(m);
            CHECK(part >= 0 && part < PARTITIONS);
            CHECK(odk_message_offset(m) == last_offset[part] + 1, "offsets in order");
            last_offset[part] = odk_message_offset(m);
            int i = record_index(m);
            CHECK(part == reports.partitions[i], "record %d partition", i);
            if (got[i]++ == 0) {
                CHECK(odk_message_offset(m) == reports.offsets[i], "record %d offset", i);
                check_record(m, i);
            }
            int tstype = -1;
            CHECK(odk_message_timestamp(m, &tstype) > 0 && tstype == ODK_TIMESTAMP_CREATE_TIME);
            records++;
        }
        odk_message_destroy(m);
    }
    CHECK(records == COUNT + 1 && eofs == PARTITIONS, "%d records, %d EOF events", records, eofs);

    /* Watermarks and positions agree with what was produced. */
    int64_t total = 0;
    for (int i = 0; i < PARTITIONS; i++) {
        int64_t low = -5, high = -5;
        CHECK_OK(odk_consumer_query_watermarks(c, topic, i, &low, &high, DEADLINE_MS), "watermarks");
        CHECK(low == 0 && high == last_offset[i] + 1, "partition %d: %lld..%lld", i, (long long)low, (long long)high);
        total += high;
    }
    CHECK(total == COUNT + 1);
    odk_topic_partition_t pos[PARTITIONS];
    for (int i = 0; i < PARTITIONS; i++) pos[i] = (odk_topic_partition_t){topic, i, -77, -77};
    CHECK_OK(odk_consumer_position(c, pos, PARTITIONS), "position");
    for (int i = 0; i < PARTITIONS; i++) {
        CHECK(pos[i].err == 0 && pos[i].offset == last_offset[i] + 1, "position %d = %lld", i, (long long)pos[i].offset);
    }

    /* Seek back to the start of partition 0 and read it again. */
    int p0 = reports.partitions[0];
    CHECK_OK(odk_consumer_seek(c, topic, p0, 0, errstr, sizeof errstr), errstr);
    odk_message_t *again = NULL;
    deadline = now_ms() + DEADLINE_MS;
    while (!again && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (m && odk_message_err(m) == ODK_ERR_NO_ERROR) again = m;
        else odk_message_destroy(m);
    }
    CHECK(again != NULL && odk_message_partition(again) == p0 && odk_message_offset(again) == 0);
    odk_message_destroy(again);
    CHECK(odk_consumer_seek(c, topic, PARTITIONS + 1, 0, errstr, sizeof errstr) == ODK_ERR__STATE);

    CHECK_OK(odk_consumer_close(c), "close");
    odk_consumer_destroy(c);
}

struct held_reports {
    int count;
    int unknown_topic;
    int64_t first_ms, last_ms;
};

/* The latest statistics JSON and how many arrived (librdkafka's stats_cb). */
struct stats_seen {
    int count;
    char json[65536];
};

static void on_stats(const char *json, size_t len, void *opaque) {
    struct stats_seen *s = opaque;
    s->count++;
    size_t n = len < sizeof s->json - 1 ? len : sizeof s->json - 1;
    memcpy(s->json, json, n);
    s->json[n] = '\0';
}

/* statistics.interval.ms + odk_conf_set_stats_cb: librdkafka's schema (docs/statistics.md),
 * served by odk_poll, with the producer's deliveries counted. */
static void statistics_in_librdkafka_schema(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-stats");
    create_topic(topic, 1);
    static struct stats_seen seen;
    odk_conf_t *conf = test_conf("statistics.interval.ms", "50", NULL);
    odk_conf_set_stats_cb(conf, on_stats);
    odk_conf_set_opaque(conf, &seen);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    for (int i = 0; i < 20; i++) {
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, "v", 1, NULL, 0, ODK_MSG_F_COPY, NULL), "produce");
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (strstr(seen.json, "\"txmsgs\":20,") == NULL && now_ms() < deadline) odk_poll(p, 50);
    CHECK(strstr(seen.json, "\"txmsgs\":20,") != NULL, "no snapshot with 20 deliveries: %.300s", seen.json);
    const char *fields[] = {"\"type\":\"producer\"", "\"name\":\"odradek#producer-", "\"msg_cnt\":0,",
                            "\"eos\":{", "\"rtt\":{", "\"p99_99\":", "\"batchcnt\":{", "\"toppars\":{",
                            "\"consumer_lag\":"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        CHECK(strstr(seen.json, fields[i]) != NULL, "statistics lack %s", fields[i]);
    }
    odk_producer_destroy(p);
}

static void on_held_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct held_reports *r = opaque;
    int64_t now = now_ms();
    if (r->count++ == 0) r->first_ms = now;
    r->last_ms = now;
    if (odk_message_err(m) == ODK_ERR__UNKNOWN_TOPIC) r->unknown_topic++;
}

/* Records for a topic that does not exist are held by the library (never blocking produce) and
 * fail together at their delivery timeout; held records count against the buffer, and a full
 * buffer refuses more with _QUEUE_FULL at once. */
static void missing_topic_records_fail_together(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-missing");
    static struct held_reports reports;
    memset(&reports, 0, sizeof reports);
    odk_conf_t *conf = test_conf("allow.auto.create.topics", "false", "request.timeout.ms", "1000",
                                 "message.timeout.ms", "2000", NULL);
    odk_conf_set_dr_msg_cb(conf, on_held_delivery);
    odk_conf_set_opaque(conf, &reports);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    enum { N = 2000 };
    int64_t start = now_ms();
    int64_t slowest = 0;
    for (int i = 0; i < N; i++) {
        char value[16];
        int len = snprintf(value, sizeof value, "%d", i);
        int64_t before = now_ms();
        odk_err_t e = odk_produce(p, topic, ODK_PARTITION_ANY, NULL, 0, value, (size_t)len, NULL, 0, 0, NULL);
        if (now_ms() - before > slowest) slowest = now_ms() - before;
        CHECK(e == ODK_ERR_NO_ERROR, "produce %d: %s", i, odk_err_name(e));
    }
    int64_t produced = now_ms() - start;
    /* A produce that waited for the topic's metadata would take message.timeout.ms (2 s). Each
     * call is timed, not the loop: 2,000 calls under valgrind on a loaded machine can take
     * longer than 2 s in total without any of them blocking. */
    CHECK(slowest < 1000, "produce blocked: %lld ms in one call", (long long)slowest);
    CHECK(odk_producer_outq_len(p) == N);
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports.count == N && reports.unknown_topic == N, "%d reports, %d _UNKNOWN_TOPIC",
          reports.count, reports.unknown_topic);
    CHECK(reports.first_ms - start >= 1900, "failed after %lld ms", (long long)(reports.first_ms - start));
    CHECK(reports.last_ms - reports.first_ms < 1000 + produced, "spread %lld ms",
          (long long)(reports.last_ms - reports.first_ms));
    odk_producer_destroy(p);

    /* 4 KiB of buffer: a few held ~1 KiB records fill it; the next produce is refused at once. */
    memset(&reports, 0, sizeof reports);
    conf = test_conf("allow.auto.create.topics", "false", "request.timeout.ms", "1000",
                     "message.timeout.ms", "2000", "queue.buffering.max.kbytes", "4", NULL);
    odk_conf_set_dr_msg_cb(conf, on_held_delivery);
    odk_conf_set_opaque(conf, &reports);
    p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    static char big[1000];
    memset(big, 'x', sizeof big);
    int accepted = 0;
    odk_err_t err = ODK_ERR_NO_ERROR;
    for (int i = 0; i < 100 && err == ODK_ERR_NO_ERROR; i++) {
        err = odk_produce(p, topic, ODK_PARTITION_ANY, NULL, 0, big, sizeof big, NULL, 0, 0, NULL);
        if (err == ODK_ERR_NO_ERROR) accepted++;
    }
    CHECK(err == ODK_ERR__QUEUE_FULL, "%s", odk_err_name(err));
    CHECK(accepted >= 1 && accepted <= 4, "%d accepted", accepted);
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports.count == accepted && reports.unknown_topic == accepted);
    /* The failed records gave their room back. */
    CHECK_OK(odk_produce(p, topic, ODK_PARTITION_ANY, NULL, 0, big, sizeof big, NULL, 0, 0, NULL), "again");
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(reports.count == accepted + 1);
    odk_producer_destroy(p);
}

/* Delivery timestamps of the records produced by offsets_for_times_finds_records_by_timestamp. */
static void on_timed_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    int64_t *ts = opaque;
    CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
    int64_t offset = odk_message_offset(m);
    CHECK(offset >= 0 && offset < 3, "offset %lld", (long long)offset);
    ts[offset] = odk_message_timestamp(m, NULL);
}

static void offsets_for_times_finds_records_by_timestamp(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-pc-times");
    create_topic(topic, 2);

    /* Three records on partition 0, at least 20 ms apart; partition 1 stays empty. */
    int64_t ts[3] = {-77, -77, -77};
    odk_conf_t *conf = test_conf(NULL);
    odk_conf_set_dr_msg_cb(conf, on_timed_delivery);
    odk_conf_set_opaque(conf, ts);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    for (int i = 0; i < 3; i++) {
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, "v", 1, NULL, 0, 0, NULL), "produce");
        CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    odk_producer_destroy(p);
    CHECK(ts[0] > 0 && ts[1] >= ts[0] + 20 && ts[2] >= ts[1] + 20, "timestamps %lld %lld %lld",
          (long long)ts[0], (long long)ts[1], (long long)ts[2]);

    conf = test_conf(NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    /* One partition per query (librdkafka does not support a partition listed twice either). */
    const int64_t at[] = {0, ts[0], ts[1], ts[1] + 1, ts[2] + 1};
    const int64_t want[] = {0, 0, 1, 2, ODK_OFFSET_END};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        odk_topic_partition_t q[] = {{topic, 0, at[i], -77}, {topic, 1, at[i], -77}};
        CHECK_OK(odk_consumer_offsets_for_times(c, q, 2, DEADLINE_MS), "offsets_for_times");
        CHECK(q[0].offset == want[i] && q[0].err == 0, "timestamp %lld: offset %lld, err %d",
              (long long)at[i], (long long)q[0].offset, q[0].err);
        /* partition 1 is empty: no record at or after any timestamp */
        CHECK(q[1].offset == ODK_OFFSET_END && q[1].err == 0, "empty partition: %lld", (long long)q[1].offset);
        CHECK(strcmp(q[0].topic, topic) == 0 && q[0].partition == 0 && q[1].partition == 1);
    }
    odk_topic_partition_t twice[] = {{topic, 0, 0, -77}, {topic, 0, ts[1], -77}};
    CHECK(odk_consumer_offsets_for_times(c, twice, 2, DEADLINE_MS) == ODK_ERR__INVALID_ARG);
    CHECK(twice[0].offset == 0 && twice[1].offset == ts[1]);

    /* A partition the topic does not have: the lookup fails and the list is left alone. */
    odk_topic_partition_t bad = {topic, 7, ts[0], -77};
    odk_err_t err = odk_consumer_offsets_for_times(c, &bad, 1, 10000);
    CHECK(err == ODK_ERR_UNKNOWN_TOPIC_OR_PART, "%s", odk_err_name(err));
    CHECK(bad.offset == ts[0] && bad.err == -77);
    CHECK(odk_consumer_offsets_for_times(c, NULL, 0, 1000) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_offsets_for_times(c, NULL, 1, 1000) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_offsets_for_times(NULL, &bad, 1, 1000) == ODK_ERR__INVALID_ARG);
    odk_consumer_destroy(c);
}

/* The partitioner callback's calls: "p<N>" keys go to partition N, "far" beyond the topic. */
struct routing {
    int calls;
    int wrong_args;
    const char *topic;
    int32_t delivered[8]; /* delivery reports per partition */
};

static int32_t route_by_key(const char *topic, const void *key, size_t keylen, int32_t partition_cnt,
                            void *opaque, void *msg_opaque) {
    struct routing *r = opaque;
    r->calls++;
    if (strcmp(topic, r->topic) != 0 || partition_cnt != 4 || msg_opaque != &r->calls || !key) r->wrong_args++;
    if (keylen == 2 && memcmp(key, "p", 1) == 0) return ((const char *)key)[1] - '0';
    if (keylen == 3 && memcmp(key, "far", 3) == 0) return partition_cnt;
    return -1;
}

static void on_routed_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct routing *r = opaque;
    CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
    int32_t part = odk_message_partition(m);
    CHECK(part >= 0 && part < 8);
    r->delivered[part]++;
}

static void partitioner_callback_routes_records(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-pc-route");
    create_topic(topic, 4);

    struct routing r;
    memset(&r, 0, sizeof r);
    r.topic = topic;
    odk_conf_t *conf = test_conf(NULL);
    odk_conf_set_partitioner_cb(conf, route_by_key);
    odk_conf_set_dr_msg_cb(conf, on_routed_delivery);
    odk_conf_set_opaque(conf, &r);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);

    /* Keys p3, p1, p3, p0, p3: partitions 3, 1, 3, 0, 3 (the first call waits for metadata). */
    const char *keys[] = {"p3", "p1", "p3", "p0", "p3"};
    for (int i = 0; i < 5; i++) {
        CHECK_OK(odk_produce(p, topic, ODK_PARTITION_ANY, keys[i], 2, "v", 1, NULL, 0, 0, &r.calls), "produce");
        CHECK(r.calls == i + 1, "the callback ran inside odk_produce (%d calls)", r.calls);
    }
    /* Out of range either way: that call fails, nothing is queued. */
    odk_err_t err = odk_produce(p, topic, ODK_PARTITION_ANY, "far", 3, "v", 1, NULL, 0, 0, &r.calls);
    CHECK(err == ODK_ERR__UNKNOWN_PARTITION, "%s", odk_err_name(err));
    err = odk_produce(p, topic, ODK_PARTITION_ANY, "neg", 3, "v", 1, NULL, 0, 0, &r.calls);
    CHECK(err == ODK_ERR__UNKNOWN_PARTITION, "%s", odk_err_name(err));
    CHECK(r.calls == 7);
    /* An explicit partition and a NULL key (sticky, as librdkafka) do not call it. */
    CHECK_OK(odk_produce(p, topic, 2, "p0", 2, "v", 1, NULL, 0, 0, &r.calls), "produce");
    CHECK_OK(odk_produce(p, topic, ODK_PARTITION_ANY, NULL, 0, "v", 1, NULL, 0, 0, &r.calls), "produce");
    CHECK(r.calls == 7 && r.wrong_args == 0, "%d calls, %d with wrong arguments", r.calls, r.wrong_args);
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    odk_producer_destroy(p);

    /* The records are where the callback said (the NULL-keyed one anywhere). */
    int total = 0;
    for (int i = 0; i < 4; i++) total += r.delivered[i];
    CHECK(total == 7, "%d delivered", total);
    CHECK(r.delivered[3] >= 3 && r.delivered[1] >= 1 && r.delivered[0] >= 1 && r.delivered[2] >= 1);
    conf = test_conf(NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    int64_t high_sum = 0;
    for (int i = 0; i < 4; i++) {
        int64_t low = -77, high = -77;
        CHECK_OK(odk_consumer_query_watermarks(c, topic, i, &low, &high, DEADLINE_MS), "watermarks");
        CHECK(high == r.delivered[i], "partition %d holds %lld records, %d reported", i, (long long)high, r.delivered[i]);
        high_sum += high;
    }
    CHECK(high_sum == 7);
    odk_consumer_destroy(c);
}

#define BATCH 40

struct batch_reports {
    int ok;
    int seen[BATCH];
    int32_t partitions[BATCH];
};

static void on_batch_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct batch_reports *r = opaque;
    CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
    int *index = odk_message_opaque(m);
    if (index == NULL) return; /* the warm-up record */
    CHECK(*index >= 0 && *index < BATCH);
    size_t len = 0;
    const char *value = odk_message_value(m, &len);
    char want[32];
    int n = snprintf(want, sizeof want, "batch-%d", *index);
    CHECK(value && len == (size_t)n && memcmp(value, want, len) == 0, "record %d value", *index);
    r->seen[*index]++;
    r->partitions[*index] = odk_message_partition(m);
    r->ok++;
}

/* odk_produce_batch: copied and owned values, keys, per-record partitions and errors, every
 * queued record reported once and stored; refusals for the whole call. */
static void produce_batch_queues_each_record_or_says_why(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-pc-batch");
    create_topic(topic, PARTITIONS);

    static struct batch_reports r;
    static int indexes[BATCH];
    odk_conf_t *conf = test_conf("linger.ms", "5", NULL);
    odk_conf_set_dr_msg_cb(conf, on_batch_delivery);
    odk_conf_set_opaque(conf, &r);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);

    /* The topic's metadata first, so a partition out of range is known to be. */
    CHECK_OK(odk_produce(p, topic, 0, NULL, 0, "warm", 4, NULL, 0, 0, NULL), "warm-up");
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");

    static char keys[BATCH][16], values[BATCH][32];
    odk_batch_message_t msgs[BATCH];
    for (int i = 0; i < BATCH; i++) {
        indexes[i] = i;
        int key_len = snprintf(keys[i], sizeof keys[i], "key-%d", i);
        int value_len = snprintf(values[i], sizeof values[i], "batch-%d", i);
        msgs[i] = (odk_batch_message_t){keys[i], (size_t)key_len, values[i], (size_t)value_len,
                                        i % 4 == 0 ? i % PARTITIONS : ODK_PARTITION_ANY, &indexes[i],
                                        ODK_ERR__FAIL};
    }
    /* Record 7 asks for a partition the topic does not have: refused alone. */
    msgs[7].partition = PARTITIONS + 2;
    size_t queued = odk_produce_batch(p, topic, ODK_MSG_F_COPY, msgs, BATCH);
    CHECK(queued == BATCH - 1, "%zu queued", queued);
    for (int i = 0; i < BATCH; i++) {
        odk_err_t want = i == 7 ? ODK_ERR__UNKNOWN_PARTITION : ODK_ERR_NO_ERROR;
        CHECK(msgs[i].err == want, "record %d: %s", i, odk_err_name(msgs[i].err));
    }
    memset(values, 'X', sizeof values); /* copied: the buffers may be reused at once */

    /* Owned values: the library frees them, even for a call refused as a whole. */
    odk_batch_message_t owned[2];
    for (int i = 0; i < 2; i++) {
        char *v = malloc(8);
        memcpy(v, "owned", 5);
        owned[i] = (odk_batch_message_t){NULL, 0, v, 5, ODK_PARTITION_ANY, NULL, ODK_ERR_NO_ERROR};
    }
    CHECK(odk_produce_batch(p, NULL, ODK_MSG_F_FREE, owned, 2) == 0);
    CHECK(owned[0].err == ODK_ERR__INVALID_ARG && owned[1].err == ODK_ERR__INVALID_ARG);
    /* Conflicting flags: refused; the FREE bit still hands the value over, as odk_produce. */
    char *v = malloc(8);
    memcpy(v, "owned", 5);
    owned[0] = (odk_batch_message_t){NULL, 0, v, 5, ODK_PARTITION_ANY, NULL, ODK_ERR_NO_ERROR};
    CHECK(odk_produce_batch(p, topic, ODK_MSG_F_FREE | ODK_MSG_F_COPY, owned, 1) == 0);
    CHECK(owned[0].err == ODK_ERR__INVALID_ARG, "%s", odk_err_name(owned[0].err));
    CHECK(odk_produce_batch(p, topic, 0, NULL, 0) == 0);

    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(r.ok == BATCH - 1, "%d reported", r.ok);
    for (int i = 0; i < BATCH; i++) {
        CHECK(r.seen[i] == (i == 7 ? 0 : 1), "record %d reported %d times", i, r.seen[i]);
        if (i % 4 == 0) CHECK(r.partitions[i] == i % PARTITIONS, "record %d partition", i);
    }
    odk_producer_destroy(p);

    /* The broker holds the warm-up record and the queued batch, nothing else. */
    conf = test_conf(NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    int64_t stored = 0;
    for (int i = 0; i < PARTITIONS; i++) {
        int64_t low = -1, high = -1;
        CHECK_OK(odk_consumer_query_watermarks(c, topic, i, &low, &high, DEADLINE_MS), "watermarks");
        stored += high - low;
    }
    CHECK(stored == BATCH, "%lld records stored", (long long)stored);
    odk_consumer_destroy(c);
}

int main(void) {
    RUN(produce_then_consume);
    RUN(missing_topic_records_fail_together);
    RUN(statistics_in_librdkafka_schema);
    RUN(offsets_for_times_finds_records_by_timestamp);
    RUN(partitioner_callback_routes_records);
    RUN(produce_batch_queues_each_record_or_says_why);
    return 0;
}
