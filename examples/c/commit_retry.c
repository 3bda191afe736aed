/*
 * Test your consumer's retry logic against a broker that fails the first two commits.
 *
 *   cc commit_retry.c $(pkg-config --cflags --libs odradek) && ./a.out
 *
 * odk_test_cluster_new starts a Kafka cluster inside this process (no broker to install);
 * odk_test_cluster_push_request_errors makes its next two OffsetCommit requests fail with
 * COORDINATOR_NOT_AVAILABLE; the consumer's commit_with_retry must still commit. Exits 0 and
 * prints "ok" when it does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <odradek.h>

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the application code under test ------------------------------------------------------ */

/* Commits the consumed offsets synchronously, retrying errors Kafka calls retriable. Returns the
 * attempts used, or -1. */
static int commit_with_retry(odk_consumer_t *c, int attempts) {
    char errstr[512];
    for (int attempt = 1; attempt <= attempts; attempt++) {
        odk_err_t err = odk_consumer_commit(c, NULL, 0, errstr, sizeof errstr);
        if (err == ODK_ERR_NO_ERROR) return attempt;
        if (!odk_err_is_retriable(err)) {
            fprintf(stderr, "commit failed: %s\n", errstr);
            return -1;
        }
        sleep_ms(100L * attempt);
    }
    return -1;
}

/* Reads `count` records of `topic`, then commits them. */
static int process_batch(odk_consumer_t *c, int count) {
    int seen = 0;
    for (int polls = 0; seen < count && polls < 300; polls++) {
        odk_message_t *m = odk_consumer_poll(c, 100);
        if (m && odk_message_err(m) == ODK_ERR_NO_ERROR) seen++;
        odk_message_destroy(m);
    }
    if (seen != count) FAIL("consumed %d of %d records", seen, count);
    return commit_with_retry(c, 5);
}

/* ---- the test ------------------------------------------------------------------------------- */

int main(void) {
    char errstr[512];
    odk_test_cluster_t *cluster = odk_test_cluster_new(1, NULL, errstr, sizeof errstr);
    if (!cluster) FAIL("cluster: %s", errstr);
    if (odk_test_cluster_create_topic(cluster, "orders", 1, errstr, sizeof errstr)) FAIL("%s", errstr);
    const char *bootstrap = odk_test_cluster_bootstrap(cluster);

    odk_conf_t *conf = odk_conf_new();
    odk_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!p) FAIL("producer: %s", errstr);
    for (int i = 0; i < 3; i++) {
        char value[16];
        int n = snprintf(value, sizeof value, "order-%d", i);
        if (odk_produce(p, "orders", 0, NULL, 0, value, (size_t)n, NULL, 0, ODK_MSG_F_COPY, NULL)) FAIL("produce");
    }
    if (odk_flush(p, 30000)) FAIL("flush");
    odk_producer_destroy(p);

    /* The broker refuses the next two OffsetCommit requests, as a coordinator that is moving. */
    int32_t errors[] = {ODK_ERR_COORDINATOR_NOT_AVAILABLE, ODK_ERR_COORDINATOR_NOT_AVAILABLE};
    odk_test_cluster_record_requests(cluster, true);
    if (odk_test_cluster_push_request_errors(cluster, "OffsetCommit", 2, errors, NULL, -1, NULL, -1,
                                             errstr, sizeof errstr)) FAIL("%s", errstr);

    conf = odk_conf_new();
    odk_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    odk_conf_set(conf, "group.id", "billing", errstr, sizeof errstr);
    odk_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof errstr);
    odk_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!c) FAIL("consumer: %s", errstr);
    const char *topics[] = {"orders"};
    if (odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr)) FAIL("%s", errstr);
    int attempts = process_batch(c, 3);
    if (attempts < 1) FAIL("the commit did not go through");
    odk_topic_partition_t tp = {"orders", 0, 0, 0};
    if (odk_consumer_committed(c, &tp, 1, 10000) || tp.offset != 3) FAIL("committed %lld", (long long)tp.offset);
    odk_consumer_close(c);
    odk_consumer_destroy(c);

    /* Two refused, then accepted: by the library's own retry of coordinator errors or by
     * commit_with_retry (attempts > 1), whichever the library leaves to the application. */
    size_t n = 0, commits = 0, refused = 0;
    odk_test_request_t *log = odk_test_cluster_requests(cluster, false, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(log[i].api_name, "OffsetCommit") != 0) continue;
        commits++;
        refused += log[i].error == ODK_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    odk_test_requests_destroy(log, n);
    if (commits != 3 || refused != 2) FAIL("%zu commits, %zu refused", commits, refused);
    odk_test_cluster_destroy(cluster);
    printf("ok (%d commit call(s))\n", attempts);
    return 0;
}
