/*
 * One producer / consumer benchmark program, compiled twice from this same source: against
 * libodradek (default) and against librdkafka (-DBENCH_RDKAFKA). Everything outside the small
 * backend section is shared, so both builds do exactly the same work.
 *
 *   bench produce BOOTSTRAP TOPIC COUNT SIZE    produce COUNT messages of SIZE bytes, wait for
 *                                               every delivery report; prints msgs/s
 *   bench produce_batch BOOTSTRAP TOPIC COUNT SIZE   the same through the batch entry point
 *                                               (rd_kafka_produce_batch / odk_produce_batch),
 *                                               BATCH_LEN messages per call
 *   bench consume BOOTSTRAP TOPIC COUNT         read COUNT messages of partition 0 from
 *                                               offset 0; prints msgs/s
 *
 * Output: one line "<backend> <mode> <count> msgs <seconds> s <msgs/s> msgs/s <MB/s> MB/s".
 * Client settings are identical for both: acks=all, no idempotence, linger.ms=5,
 * batch.size=1000000, no compression, one partition, a delivery report callback.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why) {
    fprintf(stderr, "bench: %s: %s\n", what, why);
    exit(1);
}

static long delivered, failed;

/* Property names and values both clients understand. */
static const char *const PRODUCER_CONF[][2] = {
    {"acks", "all"},          {"enable.idempotence", "false"}, {"linger.ms", "5"},
    {"batch.size", "1000000"}, {"compression.type", "none"},
};
#define N_PRODUCER_CONF (sizeof PRODUCER_CONF / sizeof PRODUCER_CONF[0])
/* Messages per produce_batch call. */
#define BATCH_LEN 1000

#ifdef BENCH_RDKAFKA
/* ---- librdkafka backend ---------------------------------------------------------------- */
#include <librdkafka/rdkafka.h>
/* BENCH_RDKAFKA_TUNED=1: librdkafka with the settings its CONFIGURATION.md gives for
 * throughput on top (TUNED_PRODUCER / TUNED_CONSUMER), reported as "librdkafka-tuned". */
#define BACKEND (tuned() ? "librdkafka-tuned" : "librdkafka")

static int tuned(void) {
    const char *v = getenv("BENCH_RDKAFKA_TUNED");
    return v && strcmp(v, "1") == 0;
}

/* Bigger batches (the default caps one at 10000 messages) and no Nagle delay. */
static const char *const TUNED_PRODUCER[][2] = {
    {"batch.num.messages", "1000000"}, {"socket.nagle.disable", "true"},
};
/* The fetcher keeps fetching until a million messages are queued (default 100000). This
 * librdkafka (Debian's 2.0) has no fetch.queue.backoff.ms. */
static const char *const TUNED_CONSUMER[][2] = {{"queued.min.messages", "1000000"}};

static void set_all(rd_kafka_conf_t *conf, const char *const (*kv)[2], size_t n) {
    char errstr[512];
    for (size_t i = 0; i < n; i++)
        if (rd_kafka_conf_set(conf, kv[i][0], kv[i][1], errstr, sizeof errstr))
            die(kv[i][0], errstr);
}

typedef rd_kafka_t producer_t;
typedef rd_kafka_t consumer_t;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk; (void)opaque;
    if (m->err) failed++; else delivered++;
}

static rd_kafka_conf_t *base_conf(const char *bootstrap) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr))
        die("conf", errstr);
    return conf;
}

static producer_t *producer_new(const char *bootstrap) {
    char errstr[512];
    rd_kafka_conf_t *conf = base_conf(bootstrap);
    for (size_t i = 0; i < N_PRODUCER_CONF; i++)
        if (rd_kafka_conf_set(conf, PRODUCER_CONF[i][0], PRODUCER_CONF[i][1], errstr, sizeof errstr))
            die(PRODUCER_CONF[i][0], errstr);
    if (rd_kafka_conf_set(conf, "queue.buffering.max.messages", "100000", errstr, sizeof errstr))
        die("conf", errstr);
    if (tuned()) set_all(conf, TUNED_PRODUCER, sizeof TUNED_PRODUCER / sizeof TUNED_PRODUCER[0]);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) die("rd_kafka_new", errstr);
    return rk;
}

/* 0: queued, 1: queue full (poll and retry) */
static int produce(producer_t *p, const char *topic, const void *value, size_t len) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return 1;
    if (err) die("produce", rd_kafka_err2str(err));
    return 0;
}

/* Queues up to n messages of the batch from `from`; returns how many were queued before the
 * first refused one (queue full: poll and call again with the rest). */
static size_t produce_batch(producer_t *p, const char *topic, const void *value, size_t len, size_t n) {
    static rd_kafka_topic_t *rkt;
    static rd_kafka_message_t msgs[BATCH_LEN];
    if (!rkt) rkt = rd_kafka_topic_new(p, topic, NULL);
    memset(msgs, 0, n * sizeof msgs[0]);
    for (size_t i = 0; i < n; i++) {
        msgs[i].payload = (void *)value;
        msgs[i].len = len;
    }
    rd_kafka_produce_batch(rkt, 0, RD_KAFKA_MSG_F_COPY, msgs, (int)n);
    size_t queued = 0;
    while (queued < n && msgs[queued].err == RD_KAFKA_RESP_ERR_NO_ERROR) queued++;
    for (size_t i = queued; i < n; i++)
        if (msgs[i].err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die("produce_batch", rd_kafka_err2str(msgs[i].err));
    return queued;
}

static void producer_poll(producer_t *p, int ms) { rd_kafka_poll(p, ms); }
static void producer_flush(producer_t *p) {
    if (rd_kafka_flush(p, 120000)) die("flush", "timed out");
}
static void producer_destroy(producer_t *p) { rd_kafka_destroy(p); }

static consumer_t *consumer_new(const char *bootstrap, const char *topic) {
    char errstr[512];
    rd_kafka_conf_t *conf = base_conf(bootstrap);
    if (rd_kafka_conf_set(conf, "group.id", "bench-unused", errstr, sizeof errstr) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr))
        die("conf", errstr);
    if (tuned()) set_all(conf, TUNED_CONSUMER, sizeof TUNED_CONSUMER / sizeof TUNED_CONSUMER[0]);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk) die("rd_kafka_new", errstr);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic, 0)->offset = 0;
    if (rd_kafka_assign(rk, list)) die("assign", "failed");
    rd_kafka_topic_partition_list_destroy(list);
    return rk;
}

/* 1: a record, 0: nothing yet */
static int consume_one(consumer_t *c) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 1000);
    if (!m) return 0;
    int record = m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
    if (!record && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) die("consume", rd_kafka_message_errstr(m));
    rd_kafka_message_destroy(m);
    return record;
}

static void consumer_destroy(consumer_t *c) {
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
}

#else
/* ---- libodradek backend ---------------------------------------------------------------- */
#include <odradek.h>
#define BACKEND "libodradek"

typedef odk_producer_t producer_t;
typedef odk_consumer_t consumer_t;

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p; (void)opaque;
    if (odk_message_err(m)) failed++; else delivered++;
}

static odk_conf_t *base_conf(const char *bootstrap) {
    char errstr[512];
    odk_conf_t *conf = odk_conf_new();
    if (odk_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr)) die("conf", errstr);
    return conf;
}

static producer_t *producer_new(const char *bootstrap) {
    char errstr[512];
    odk_conf_t *conf = base_conf(bootstrap);
    for (size_t i = 0; i < N_PRODUCER_CONF; i++)
        if (odk_conf_set(conf, PRODUCER_CONF[i][0], PRODUCER_CONF[i][1], errstr, sizeof errstr))
            die(PRODUCER_CONF[i][0], errstr);
    if (odk_conf_set(conf, "queue.buffering.max.messages", "100000", errstr, sizeof errstr))
        die("conf", errstr);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!p) die("odk_producer_new", errstr);
    return p;
}

static int produce(producer_t *p, const char *topic, const void *value, size_t len) {
    odk_err_t err = odk_produce(p, topic, 0, NULL, 0, (void *)value, len, NULL, 0, ODK_MSG_F_COPY, NULL);
    if (err == ODK_ERR__QUEUE_FULL) return 1;
    if (err) die("produce", odk_err_string(err));
    return 0;
}

static size_t produce_batch(producer_t *p, const char *topic, const void *value, size_t len, size_t n) {
    static odk_batch_message_t msgs[BATCH_LEN];
    for (size_t i = 0; i < n; i++)
        msgs[i] = (odk_batch_message_t){NULL, 0, (void *)value, len, 0, NULL, ODK_ERR_NO_ERROR};
    odk_produce_batch(p, topic, ODK_MSG_F_COPY, msgs, n);
    size_t queued = 0;
    while (queued < n && msgs[queued].err == ODK_ERR_NO_ERROR) queued++;
    for (size_t i = queued; i < n; i++)
        if (msgs[i].err != ODK_ERR__QUEUE_FULL) die("produce_batch", odk_err_string(msgs[i].err));
    return queued;
}

static void producer_poll(producer_t *p, int ms) { odk_poll(p, ms); }
static void producer_flush(producer_t *p) {
    if (odk_flush(p, 120000)) die("flush", "timed out");
}
static void producer_destroy(producer_t *p) { odk_producer_destroy(p); }

static consumer_t *consumer_new(const char *bootstrap, const char *topic) {
    char errstr[512];
    odk_conf_t *conf = base_conf(bootstrap);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!c) die("odk_consumer_new", errstr);
    odk_topic_partition_t tp = {topic, 0, 0, 0};
    if (odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr)) die("assign", errstr);
    return c;
}

static int consume_one(consumer_t *c) {
    odk_message_t *m = odk_consumer_poll(c, 1000);
    if (!m) return 0;
    odk_err_t err = odk_message_err(m);
    if (err && err != ODK_ERR__PARTITION_EOF) die("consume", odk_message_errstr(m));
    odk_message_destroy(m);
    return err == ODK_ERR_NO_ERROR;
}

static void consumer_destroy(consumer_t *c) {
    odk_consumer_close(c);
    odk_consumer_destroy(c);
}
#endif

/* ---- shared driver --------------------------------------------------------------------- */
static void report(const char *mode, long count, size_t size, double secs) {
    printf("%s %s %ld msgs %.3f s %.0f msgs/s %.2f MB/s\n", BACKEND, mode, count, secs,
           (double)count / secs, (double)count * (double)size / secs / 1e6);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s produce|consume BOOTSTRAP TOPIC COUNT [SIZE]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1], *bootstrap = argv[2], *topic = argv[3];
    long count = atol(argv[4]);
    size_t size = argc > 5 ? (size_t)atol(argv[5]) : 100;

    int batch = strcmp(mode, "produce_batch") == 0;
    if (strcmp(mode, "produce") == 0 || batch) {
        char *value = malloc(size);
        for (size_t i = 0; i < size; i++) value[i] = (char)('a' + i % 26);
        producer_t *p = producer_new(bootstrap);
        /* Warm-up: topic metadata and connections, outside the measurement. */
        while (produce(p, topic, value, size)) producer_poll(p, 1);
        producer_flush(p);
        delivered = failed = 0;
        double start = now_s();
        if (batch) {
            for (long i = 0; i < count;) {
                size_t n = (size_t)(count - i) < BATCH_LEN ? (size_t)(count - i) : BATCH_LEN;
                size_t queued = produce_batch(p, topic, value, size, n);
                i += (long)queued;
                producer_poll(p, queued < n ? 1 : 0);
            }
        } else {
            for (long i = 0; i < count; i++) {
                while (produce(p, topic, value, size)) producer_poll(p, 1);
                if ((i & 1023) == 0) producer_poll(p, 0);
            }
        }
        producer_flush(p);
        double secs = now_s() - start;
        producer_destroy(p);
        free(value);
        if (delivered != count || failed) {
            fprintf(stderr, "bench: %ld delivered, %ld failed of %ld\n", delivered, failed, count);
            return 1;
        }
        report(mode, count, size, secs);
    } else if (strcmp(mode, "consume") == 0) {
        consumer_t *c = consumer_new(bootstrap, topic);
        long got = 0;
        /* The clock starts with the first record (connection setup is not measured). */
        while (got == 0) got += consume_one(c);
        double start = now_s();
        double give_up = start + 300;
        while (got < count && now_s() < give_up) got += consume_one(c);
        double secs = now_s() - start;
        consumer_destroy(c);
        if (got < count) {
            fprintf(stderr, "bench: consumed %ld of %ld\n", got, count);
            return 1;
        }
        report("consume", count - 1, size, secs);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
