/*
 * Odradek's twin of librdkafka's examples/consumer.c: joins consumer group GROUP with the
 * given group protocol ("classic" or "consumer", KIP-848), subscribes to the topics and prints
 * every message until Ctrl-C, then leaves the group. The steps are librdkafka's, one for one
 * (c/README.md maps each call).
 *
 *   consumer BOOTSTRAP GROUP PROTOCOL TOPIC [TOPIC...]
 *
 * Build: cc consumer.c $(pkg-config --cflags --libs odradek)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sigaction */
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <odradek.h>

static volatile sig_atomic_t run = 1;

/* SIGINT: leave the poll loop. */
static void stop(int sig) {
    (void)sig;
    run = 0;
}

/* Whether `len` bytes at `p` are printable text. */
static int printable(const char *p, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (p[i] < 0x20 || p[i] > 0x7e) return 0;
    }
    return 1;
}

/* Prints a key or a value: as text when it is text, else its size. */
static void show(const char *label, const char *p, size_t len) {
    if (!p) return;
    if (printable(p, len))
        printf(" %s: %.*s\n", label, (int)len, p);
    else
        printf(" %s: (%zu bytes)\n", label, len);
}

int main(int argc, char **argv) {
    odk_consumer_t *consumer; /* the consumer handle */
    odk_conf_t *conf;         /* configuration, copied by odk_consumer_new */
    odk_err_t err;            /* result of odk_* calls */
    char errstr[512];         /* error messages of odk_* calls */

    if (argc < 5) {
        fprintf(stderr, "%% Usage: %s <bootstrap servers> <group.id> <group.protocol> <topic1> <topic2>..\n",
                argv[0]);
        return 1;
    }
    const char *brokers = argv[1];
    const char *groupid = argv[2];
    const char *group_protocol = argv[3];
    const char **topics = (const char **)&argv[4];
    size_t topic_cnt = (size_t)(argc - 4);

    /* 1. Configuration: the brokers, the group, its protocol, and where a partition without a
     * committed offset starts (here: at its first message). */
    conf = odk_conf_new();
    const char *settings[][2] = {{"bootstrap.servers", brokers},
                                 {"group.id", groupid},
                                 {"group.protocol", group_protocol},
                                 {"auto.offset.reset", "earliest"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        if (odk_conf_set(conf, settings[i][0], settings[i][1], errstr, sizeof errstr) != ODK_ERR_NO_ERROR) {
            fprintf(stderr, "%s\n", errstr);
            odk_conf_destroy(conf);
            return 1;
        }
    }

    /* 2. The consumer. odk_consumer_new copies the configuration; rd_kafka_poll_set_consumer
     * has no counterpart: odk_consumer_poll serves every consumer event. */
    consumer = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!consumer) {
        fprintf(stderr, "%% Failed to create new consumer: %s\n", errstr);
        return 1;
    }

    /* 3. Subscribe: the topics are a plain array of names (a name starting with ^ is a regular
     * expression). Partitions arrive through the group's rebalances, served by poll. */
    err = odk_consumer_subscribe(consumer, topics, topic_cnt, errstr, sizeof errstr);
    if (err != ODK_ERR_NO_ERROR) {
        fprintf(stderr, "%% Failed to subscribe to %zu topics: %s\n", topic_cnt, errstr);
        odk_consumer_destroy(consumer);
        return 1;
    }
    fprintf(stderr, "%% Subscribed to %zu topic(s), waiting for rebalance and messages...\n", topic_cnt);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    /* 4. The poll loop: one message (or consumer error) at a time. */
    while (run) {
        odk_message_t *msg = odk_consumer_poll(consumer, 100);
        if (!msg) continue; /* nothing within 100 ms */

        if (odk_message_err(msg) != ODK_ERR_NO_ERROR) {
            /* Consumer errors are informational: the consumer keeps trying. */
            fprintf(stderr, "%% Consumer error: %s\n", odk_message_errstr(msg));
            odk_message_destroy(msg);
            continue;
        }

        printf("Message on %s [%d] at offset %lld:\n", odk_message_topic(msg),
               odk_message_partition(msg), (long long)odk_message_offset(msg));
        size_t key_len = 0, value_len = 0;
        const char *key = odk_message_key(msg, &key_len);
        const char *value = odk_message_value(msg, &value_len);
        show("Key", key, key_len);
        show("Value", value, value_len);
        fflush(stdout);

        /* Its offset is stored now (enable.auto.offset.store) and committed in the background
         * (enable.auto.commit) and on close. */
        odk_message_destroy(msg);
    }

    /* 5. Leave the group: commits the stored offsets and gives the partitions back. */
    fprintf(stderr, "%% Closing consumer\n");
    odk_consumer_close(consumer);

    /* 6. Done. */
    odk_consumer_destroy(consumer);
    return 0;
}
