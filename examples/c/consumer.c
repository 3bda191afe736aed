/*
 * Joins consumer group GROUP, subscribes to TOPIC, prints COUNT messages, commits and leaves.
 *
 *   consumer BOOTSTRAP TOPIC [COUNT] [GROUP]
 *
 * Build: cc consumer.c $(pkg-config --cflags --libs odradek)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <odradek.h>

/* Runs inside odk_consumer_poll: the library applies the assignment itself afterwards. */
static void on_rebalance(odk_consumer_t *consumer, odk_err_t event,
                         const odk_topic_partition_t *partitions, size_t cnt, void *opaque) {
    (void)consumer;
    (void)opaque;
    fprintf(stderr, "%s:", event == ODK_ERR__ASSIGN_PARTITIONS ? "assigned" : "revoked");
    for (size_t i = 0; i < cnt; i++) fprintf(stderr, " %s[%d]", partitions[i].topic, partitions[i].partition);
    fprintf(stderr, "\n");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BOOTSTRAP TOPIC [COUNT] [GROUP]\n", argv[0]);
        return 2;
    }
    const char *topic = argv[2];
    long count = argc > 3 ? atol(argv[3]) : 10;
    const char *group = argc > 4 ? argv[4] : "odradek-example";
    char errstr[512];

    odk_conf_t *conf = odk_conf_new();
    if (odk_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) ||
        odk_conf_set(conf, "group.id", group, errstr, sizeof errstr) ||
        odk_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof errstr)) {
        fprintf(stderr, "configuration: %s\n", errstr);
        odk_conf_destroy(conf);
        return 1;
    }
    odk_conf_set_rebalance_cb(conf, on_rebalance);
    odk_consumer_t *consumer = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!consumer) {
        fprintf(stderr, "odk_consumer_new: %s\n", errstr);
        return 1;
    }
    const char *topics[] = {topic};
    if (odk_consumer_subscribe(consumer, topics, 1, errstr, sizeof errstr)) {
        fprintf(stderr, "subscribe: %s\n", errstr);
        odk_consumer_destroy(consumer);
        return 1;
    }

    long seen = 0;
    time_t give_up = time(NULL) + 60;
    while (seen < count && time(NULL) < give_up) {
        odk_message_t *msg = odk_consumer_poll(consumer, 500);
        if (!msg) continue;
        if (odk_message_err(msg) == ODK_ERR_NO_ERROR) {
            size_t key_len = 0, value_len = 0;
            const char *key = odk_message_key(msg, &key_len);
            const char *value = odk_message_value(msg, &value_len);
            printf("%s[%d]@%lld: %.*s = %.*s\n", odk_message_topic(msg), odk_message_partition(msg),
                   (long long)odk_message_offset(msg), (int)key_len, key ? key : "",
                   (int)value_len, value ? value : "");
            seen++;
        } else {
            fprintf(stderr, "consume error: %s\n", odk_message_errstr(msg));
        }
        odk_message_destroy(msg);
    }
    /* Commit what was returned (the stored offsets), then leave the group. */
    odk_err_t err = seen ? odk_consumer_commit(consumer, NULL, 0, errstr, sizeof errstr) : ODK_ERR_NO_ERROR;
    if (err) fprintf(stderr, "commit: %s\n", errstr);
    odk_consumer_close(consumer);
    odk_consumer_destroy(consumer);
    if (seen < count) {
        fprintf(stderr, "consumed %ld of %ld messages before giving up\n", seen, count);
        return 1;
    }
    return err == ODK_ERR_NO_ERROR ? 0 : 1;
}
