/*
 * odk_test_cluster_*: the in-process test cluster through its public API only, with
 * libodradek's producer and consumer as the client under test: an injected
 * NOT_LEADER_OR_FOLLOWER on Produce is retried and delivered once; COORDINATOR_NOT_AVAILABLE on
 * OffsetCommit is retried; a broker taken down is reported and recovered from; a moved leader
 * is followed; a delayed response triggers request.timeout.ms; the request log shows what the
 * client sent. Needs no external broker.
 */
#include "harness.h"

struct reports {
    int ok;
    int failed;
    int64_t last_offset;
};

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct reports *r = opaque;
    if (odk_message_err(m) == ODK_ERR_NO_ERROR) {
        r->ok++;
        r->last_offset = odk_message_offset(m);
    } else {
        r->failed++;
    }
}

/* A configuration for `cluster` with extra name/value pairs (NULL-ended). */
static odk_conf_t *conf_for(odk_test_cluster_t *cluster, const char *first, ...) {
    char errstr[512];
    odk_conf_t *conf = odk_conf_new();
    CHECK(conf != NULL);
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", odk_test_cluster_bootstrap(cluster), errstr, sizeof errstr), errstr);
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        CHECK_OK(odk_conf_set(conf, k, v, errstr, sizeof errstr), errstr);
    }
    va_end(ap);
    return conf;
}

static odk_test_cluster_t *start(int brokers, const char *topic, int partitions) {
    char errstr[512];
    const char *config[] = {"num.partitions", "1", NULL};
    odk_test_cluster_t *c = odk_test_cluster_new(brokers, config, errstr, sizeof errstr);
    CHECK(c != NULL, "%s", errstr);
    if (topic) CHECK_OK(odk_test_cluster_create_topic(c, topic, partitions, errstr, sizeof errstr), errstr);
    return c;
}

static odk_producer_t *producer(odk_test_cluster_t *cluster, struct reports *r, odk_conf_t *conf) {
    char errstr[512];
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_conf_set_opaque(conf, r);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    (void)cluster;
    CHECK(p != NULL, "%s", errstr);
    return p;
}

/* Produces one value to partition 0 of `topic` and waits for its report. */
static void produce_one(odk_producer_t *p, struct reports *r, const char *topic, const char *value) {
    int before = r->ok + r->failed;
    CHECK_OK(odk_produce(p, topic, 0, NULL, 0, (void *)value, strlen(value), NULL, 0, ODK_MSG_F_COPY, NULL), "produce");
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (r->ok + r->failed == before && now_ms() < deadline) odk_poll(p, 50);
    CHECK(r->ok + r->failed == before + 1, "no delivery report");
}

/* Reads partition 0 of `topic` from the beginning: the values concatenated with ',' into `out`. */
static int read_values(odk_test_cluster_t *cluster, const char *topic, int expect, char *out, size_t out_size) {
    char errstr[512];
    odk_conf_t *conf = conf_for(cluster, NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    odk_topic_partition_t tp = {topic, 0, ODK_OFFSET_BEGINNING, 0};
    CHECK_OK(odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr), errstr);
    out[0] = '\0';
    int n = 0;
    int64_t deadline = now_ms() + DEADLINE_MS, quiet = 0;
    while (now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 100);
        if (m && odk_message_err(m) == ODK_ERR_NO_ERROR) {
            size_t len = 0;
            const char *v = odk_message_value(m, &len);
            size_t used = strlen(out);
            snprintf(out + used, out_size - used, "%s%.*s", n ? "," : "", (int)len, v);
            n++;
        }
        odk_message_destroy(m);
        if (n >= expect) {
            if (!quiet) quiet = now_ms() + 300;
            if (now_ms() > quiet) break;
        }
    }
    odk_consumer_destroy(c);
    return n;
}

/* Requests of `api` in the log (the array is freed by the caller). */
static size_t count_api(const odk_test_request_t *log, size_t n, int16_t api) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += log[i].api_key == api;
    return k;
}

#define PRODUCE 0
#define FETCH 1
#define OFFSET_COMMIT 8

static void not_leader_on_produce_is_retried_and_delivered_once(void) {
    char errstr[512], values[256];
    odk_test_cluster_t *cluster = start(1, "t", 1);
    odk_test_cluster_record_requests(cluster, true);
    int32_t errors[] = {ODK_ERR_NOT_LEADER_FOR_PARTITION, ODK_ERR_NOT_LEADER_FOR_PARTITION};
    CHECK_OK(odk_test_cluster_push_request_errors(cluster, "Produce", 2, errors, NULL, -1, NULL, -1, errstr, sizeof errstr), errstr);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "linger.ms", "0", "retry.backoff.ms", "20", NULL));
    produce_one(p, &r, "t", "once");
    CHECK(r.ok == 1 && r.last_offset == 0);
    odk_producer_destroy(p);
    CHECK(odk_test_cluster_pending_rules(cluster) == 0);
    size_t n = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, false, &n);
    CHECK(count_api(log, n, PRODUCE) == 3, "%zu produces", count_api(log, n, PRODUCE));
    size_t produces = 0;
    for (size_t i = 0; i < n; i++) {
        if (log[i].api_key != PRODUCE) continue;
        if (produces++ < 2) {
            CHECK(log[i].action && strcmp(log[i].action, "error") == 0);
            CHECK(log[i].error == ODK_ERR_NOT_LEADER_FOR_PARTITION);
        } else {
            CHECK(log[i].action == NULL && log[i].error == 0);
        }
    }
    odk_test_requests_destroy(log, n);
    CHECK(read_values(cluster, "t", 1, values, sizeof values) == 1 && strcmp(values, "once") == 0, "%s", values);
    odk_test_cluster_destroy(cluster);
}

static void coordinator_not_available_on_offset_commit_is_retried(void) {
    char errstr[512];
    odk_test_cluster_t *cluster = start(1, "t", 1);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "linger.ms", "0", NULL));
    produce_one(p, &r, "t", "a");
    produce_one(p, &r, "t", "b");
    produce_one(p, &r, "t", "c");
    odk_producer_destroy(p);
    odk_test_cluster_record_requests(cluster, true);
    int32_t errors[] = {ODK_ERR_COORDINATOR_NOT_AVAILABLE, ODK_ERR_COORDINATOR_NOT_AVAILABLE};
    CHECK_OK(odk_test_cluster_push_request_errors(cluster, "OffsetCommit", 2, errors, NULL, -1, NULL, -1, errstr, sizeof errstr), errstr);
    odk_conf_t *conf = conf_for(cluster, "group.id", "g", "auto.offset.reset", "earliest",
                                "enable.auto.commit", "true", "auto.commit.interval.ms", "100", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    const char *topics[] = {"t"};
    CHECK_OK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr), errstr);
    int seen = 0;
    int64_t committed = -1;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (committed != 3 && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 100);
        if (m && odk_message_err(m) == ODK_ERR_NO_ERROR) seen++;
        odk_message_destroy(m);
        if (seen == 3) {
            odk_topic_partition_t tp = {"t", 0, 0, 0};
            if (odk_consumer_committed(c, &tp, 1, 5000) == ODK_ERR_NO_ERROR) committed = tp.offset;
        }
    }
    CHECK(seen == 3 && committed == 3, "seen %d, committed %lld", seen, (long long)committed);
    CHECK_OK(odk_consumer_close(c), "close");
    odk_consumer_destroy(c);
    size_t n = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, true, &n);
    size_t commits = 0, refused = 0, accepted = 0;
    for (size_t i = 0; i < n; i++) {
        if (log[i].api_key != OFFSET_COMMIT) continue;
        if (commits++ < 2) refused += log[i].error == ODK_ERR_COORDINATOR_NOT_AVAILABLE;
        else accepted += log[i].action == NULL;
    }
    odk_test_requests_destroy(log, n);
    CHECK(refused == 2 && accepted >= 1, "%zu commits, %zu refused, %zu accepted", commits, refused, accepted);
    odk_test_cluster_destroy(cluster);
}

static void a_broker_taken_down_is_reported_and_recovered_from(void) {
    char errstr[512], values[256];
    odk_test_cluster_t *cluster = start(1, "t", 1);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "linger.ms", "0", "request.timeout.ms", "500",
                                                       "message.timeout.ms", "1500", NULL));
    produce_one(p, &r, "t", "before");
    CHECK(r.ok == 1);
    CHECK_OK(odk_test_cluster_broker_set_down(cluster, 1, errstr, sizeof errstr), errstr);
    /* The client reports it: the record produced while the broker is down fails. */
    produce_one(p, &r, "t", "lost");
    CHECK(r.failed == 1, "%d failed", r.failed);
    CHECK_OK(odk_test_cluster_broker_set_up(cluster, 1, errstr, sizeof errstr), errstr);
    produce_one(p, &r, "t", "after");
    CHECK(r.ok == 2, "%d ok", r.ok);
    odk_producer_destroy(p);
    CHECK(read_values(cluster, "t", 2, values, sizeof values) == 2 && strcmp(values, "before,after") == 0, "%s", values);
    CHECK(odk_test_cluster_broker_set_down(cluster, 9, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_test_cluster_destroy(cluster);
}

static void a_moved_leader_is_followed(void) {
    char errstr[512], values[256];
    odk_test_cluster_t *cluster = start(3, "t", 1);
    CHECK(odk_test_cluster_partition_leader(cluster, "t", 0, NULL) == 1);
    odk_test_cluster_record_requests(cluster, true);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "linger.ms", "0", "retry.backoff.ms", "20", NULL));
    produce_one(p, &r, "t", "on-1");
    CHECK(odk_test_cluster_partition_set_leader(cluster, "t", 0, 2, errstr, sizeof errstr) == 1, "%s", errstr);
    produce_one(p, &r, "t", "on-2");
    CHECK(odk_test_cluster_partition_set_leader(cluster, "t", 0, 3, errstr, sizeof errstr) == 2, "%s", errstr);
    produce_one(p, &r, "t", "on-3");
    CHECK(r.ok == 3, "%d ok, %d failed", r.ok, r.failed);
    odk_producer_destroy(p);
    CHECK(read_values(cluster, "t", 3, values, sizeof values) == 3 && strcmp(values, "on-1,on-2,on-3") == 0, "%s", values);
    int32_t epoch = -1;
    CHECK(odk_test_cluster_partition_leader(cluster, "t", 0, &epoch) == 3 && epoch == 2);
    size_t n = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, false, &n);
    int ok_on[4] = {0}, fetch_on[4] = {0};
    for (size_t i = 0; i < n; i++) {
        if (log[i].broker < 1 || log[i].broker > 3) continue;
        if (log[i].api_key == PRODUCE && !log[i].action) ok_on[log[i].broker]++;
        if (log[i].api_key == FETCH) fetch_on[log[i].broker]++;
    }
    odk_test_requests_destroy(log, n);
    CHECK(ok_on[1] && ok_on[2] && ok_on[3], "produce accepted on 1:%d 2:%d 3:%d", ok_on[1], ok_on[2], ok_on[3]);
    CHECK(fetch_on[3], "no fetch on the last leader");
    odk_test_cluster_destroy(cluster);
}

static void a_delayed_response_triggers_request_timeout(void) {
    char errstr[512], values[256];
    odk_test_cluster_t *cluster = start(1, "t", 1);
    odk_test_cluster_record_requests(cluster, true);
    int64_t id = odk_test_cluster_add_rule(cluster, "Produce", "delay", 0, 10000, 1, -1, NULL, -1, NULL, errstr, sizeof errstr);
    CHECK(id >= 0, "%s", errstr);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "linger.ms", "0", "request.timeout.ms", "500", NULL));
    int64_t started = now_ms();
    produce_one(p, &r, "t", "late");
    int64_t elapsed = now_ms() - started;
    CHECK(r.ok == 1 && r.last_offset == 0);
    CHECK(elapsed >= 500 && elapsed < 8000, "%lld ms", (long long)elapsed);
    odk_producer_destroy(p);
    size_t n = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, false, &n);
    size_t produces = count_api(log, n, PRODUCE);
    odk_test_requests_destroy(log, n);
    CHECK(produces == 2, "%zu produces", produces);
    CHECK(read_values(cluster, "t", 1, values, sizeof values) == 1 && strcmp(values, "late") == 0, "delivered once: %s", values);
    CHECK(odk_test_cluster_remove_rule(cluster, id) == 0, "used up");
    odk_test_cluster_destroy(cluster);
}

static void the_request_log_shows_what_the_client_sent(void) {
    odk_test_cluster_t *cluster = start(1, "t", 1);
    odk_test_cluster_record_requests(cluster, true);
    struct reports r = {0};
    odk_producer_t *p = producer(cluster, &r, conf_for(cluster, "client.id", "logged-client", "linger.ms", "0", NULL));
    produce_one(p, &r, "t", "x");
    odk_producer_destroy(p);
    size_t n = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, true, &n);
    CHECK(n > 0);
    int api_versions = 0, metadata = 0, produce = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(log[i].client_id && strcmp(log[i].client_id, "logged-client") == 0);
        CHECK(log[i].broker == 1);
        api_versions += strcmp(log[i].api_name, "ApiVersions") == 0;
        metadata += strcmp(log[i].api_name, "Metadata") == 0;
        if (log[i].api_key == PRODUCE) {
            produce++;
            CHECK(log[i].partition_cnt == 1 && log[i].api_version >= 3);
        }
    }
    odk_test_requests_destroy(log, n);
    CHECK(api_versions && metadata && produce == 1);
    log = odk_test_cluster_requests(cluster, false, &n);
    CHECK(log == NULL && n == 0, "the log was emptied");
    odk_test_cluster_destroy(cluster);
}

static void null_and_bad_arguments(void) {
    char errstr[512];
    odk_test_cluster_destroy(NULL);
    CHECK(odk_test_cluster_bootstrap(NULL) == NULL);
    CHECK(odk_test_cluster_new(0, NULL, errstr, sizeof errstr) == NULL);
    odk_test_cluster_t *c = start(2, "u", 2);
    CHECK(strchr(odk_test_cluster_bootstrap(c), ',') != NULL);
    CHECK(odk_test_cluster_add_rule(c, "NoSuchApi", "error", 6, 0, 1, -1, NULL, -1, NULL, errstr, sizeof errstr) == -1);
    CHECK(strstr(errstr, "unknown API") != NULL, "%s", errstr);
    CHECK(odk_test_cluster_add_rule(c, "Produce", "explode", 0, 0, 1, -1, NULL, -1, NULL, errstr, sizeof errstr) == -1);
    CHECK(odk_test_cluster_partition_set_leader(c, "missing", 0, 1, errstr, sizeof errstr) == -1);
    CHECK_OK(odk_test_cluster_coordinator_set(c, "group", "g", 2, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_test_cluster_set_apiversion(c, "Produce", 3, 7, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_test_cluster_set_apiversion(c, "Produce", 0, -1, errstr, sizeof errstr), errstr);
    CHECK(odk_test_cluster_set_apiversion(c, "ApiVersions", 0, 1, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK_OK(odk_test_cluster_partition_set_follower(c, "u", 0, 2, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_test_cluster_broker_set_rtt(c, 1, 5, errstr, sizeof errstr), errstr);
    CHECK(odk_test_cluster_close_connections(c, -1, NULL) == 0);
    CHECK(odk_test_cluster_pending_rules(NULL) == 0);
    odk_test_cluster_clear_rules(c);
    odk_test_cluster_destroy(c);
}

static void start_and_stop_are_fast(void) {
    char errstr[512];
    for (int brokers = 1; brokers <= 3; brokers += 2) {
        int64_t started = now_ms();
        for (int i = 0; i < 5; i++) {
            odk_test_cluster_t *c = odk_test_cluster_new(brokers, NULL, errstr, sizeof errstr);
            CHECK(c != NULL, "%s", errstr);
            odk_test_cluster_destroy(c);
        }
        int64_t each = (now_ms() - started) / 5;
        /* Generous: the same program runs under valgrind. */
        CHECK(each < 5000, "%d brokers: %lld ms", brokers, (long long)each);
    }
}

int main(void) {
    RUN(not_leader_on_produce_is_retried_and_delivered_once);
    RUN(coordinator_not_available_on_offset_commit_is_retried);
    RUN(a_broker_taken_down_is_reported_and_recovered_from);
    RUN(a_moved_leader_is_followed);
    RUN(a_delayed_response_triggers_request_timeout);
    RUN(the_request_log_shows_what_the_client_sent);
    RUN(null_and_bad_arguments);
    RUN(start_and_stop_are_fast);
    return 0;
}
