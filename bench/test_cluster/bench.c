/*
 * Per-test cost of odk_test_cluster_* from C: start + stop of an empty cluster, and start + one
 * produce/consume round trip (libodradek's producer and consumer) + stop, for 1 and 3 brokers.
 * Prints one JSON object per measurement (milliseconds).
 *
 *   cc -O2 bench.c $(pkg-config --cflags --libs odradek) && ./a.out [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <odradek.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what, const char *errstr) {
    fprintf(stderr, "%s: %s\n", what, errstr);
    exit(1);
}

static void round_trip(const char *bootstrap) {
    char errstr[512];
    odk_conf_t *conf = odk_conf_new();
    odk_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    odk_conf_set(conf, "linger.ms", "0", errstr, sizeof errstr);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!p) die("producer", errstr);
    if (odk_produce(p, "t", 0, NULL, 0, "hello", 5, NULL, 0, ODK_MSG_F_COPY, NULL)) die("produce", "");
    if (odk_flush(p, 30000)) die("flush", "");
    odk_producer_destroy(p);
    conf = odk_conf_new();
    odk_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!c) die("consumer", errstr);
    odk_topic_partition_t tp = {"t", 0, ODK_OFFSET_BEGINNING, 0};
    if (odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr)) die("assign", errstr);
    for (;;) {
        odk_message_t *m = odk_consumer_poll(c, 100);
        int ok = m && odk_message_err(m) == ODK_ERR_NO_ERROR;
        odk_message_destroy(m);
        if (ok) break;
    }
    odk_consumer_destroy(c);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    char errstr[512];
    for (int brokers = 1; brokers <= 3; brokers += 2) {
        odk_test_cluster_destroy(odk_test_cluster_new(brokers, NULL, errstr, sizeof errstr));
        for (int i = 0; i < rounds; i++) {
            double t0 = now_ms();
            odk_test_cluster_t *c = odk_test_cluster_new(brokers, NULL, errstr, sizeof errstr);
            if (!c) die("cluster", errstr);
            double t1 = now_ms();
            odk_test_cluster_destroy(c);
            double t2 = now_ms();
            printf("{\"lang\":\"c\",\"client\":\"none\",\"scenario\":\"empty\",\"brokers\":%d,\"start_ms\":%.3f,\"stop_ms\":%.3f,\"total_ms\":%.3f}\n",
                   brokers, t1 - t0, t2 - t1, t2 - t0);
        }
        for (int i = 0; i < rounds; i++) {
            double t0 = now_ms();
            odk_test_cluster_t *c = odk_test_cluster_new(brokers, NULL, errstr, sizeof errstr);
            if (!c) die("cluster", errstr);
            if (odk_test_cluster_create_topic(c, "t", 1, errstr, sizeof errstr)) die("topic", errstr);
            double t1 = now_ms();
            round_trip(odk_test_cluster_bootstrap(c));
            double t2 = now_ms();
            odk_test_cluster_destroy(c);
            double t3 = now_ms();
            printf("{\"lang\":\"c\",\"client\":\"odradek\",\"scenario\":\"round_trip\",\"brokers\":%d,\"start_ms\":%.3f,\"round_trip_ms\":%.3f,\"stop_ms\":%.3f,\"total_ms\":%.3f}\n",
                   brokers, t1 - t0, t2 - t1, t3 - t2, t3 - t0);
        }
    }
    return 0;
}
