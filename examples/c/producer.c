/*
 * Produces COUNT messages ("message 0", "message 1", ...) with keys "key-0", ... to TOPIC and
 * waits until every one is delivered.
 *
 *   producer BOOTSTRAP TOPIC [COUNT]
 *
 * Build: cc producer.c $(pkg-config --cflags --libs odradek)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <odradek.h>

struct counts {
    long delivered;
    long failed;
};

/* Runs inside odk_poll / odk_flush, on this program's thread. */
static void on_delivery(odk_producer_t *producer, const odk_message_t *msg, void *opaque) {
    (void)producer;
    struct counts *counts = opaque;
    if (odk_message_err(msg) == ODK_ERR_NO_ERROR) {
        counts->delivered++;
    } else {
        counts->failed++;
        fprintf(stderr, "delivery failed: %s (%s)\n", odk_message_errstr(msg),
                odk_err_name(odk_message_err(msg)));
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BOOTSTRAP TOPIC [COUNT]\n", argv[0]);
        return 2;
    }
    const char *topic = argv[2];
    long count = argc > 3 ? atol(argv[3]) : 10;
    char errstr[512];
    struct counts counts = {0, 0};

    odk_conf_t *conf = odk_conf_new();
    if (odk_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) != ODK_ERR_NO_ERROR ||
        odk_conf_set(conf, "linger.ms", "5", errstr, sizeof errstr) != ODK_ERR_NO_ERROR) {
        fprintf(stderr, "configuration: %s\n", errstr);
        odk_conf_destroy(conf);
        return 1;
    }
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_conf_set_opaque(conf, &counts);
    odk_producer_t *producer = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf); /* the producer keeps its own copy */
    if (!producer) {
        fprintf(stderr, "odk_producer_new: %s\n", errstr);
        return 1;
    }

    for (long i = 0; i < count; i++) {
        char key[32], value[64];
        snprintf(key, sizeof key, "key-%ld", i);
        int value_len = snprintf(value, sizeof value, "message %ld", i);
        odk_err_t err;
        while ((err = odk_produce(producer, topic, ODK_PARTITION_ANY, key, strlen(key), value,
                                  (size_t)value_len, NULL, 0, ODK_MSG_F_COPY, NULL)) ==
               ODK_ERR__QUEUE_FULL) {
            odk_poll(producer, 100); /* serve delivery reports to make room */
        }
        if (err != ODK_ERR_NO_ERROR) {
            fprintf(stderr, "odk_produce: %s\n", odk_err_string(err));
            break;
        }
        odk_poll(producer, 0);
    }
    odk_err_t err = odk_flush(producer, 30000);
    odk_producer_destroy(producer);
    if (err != ODK_ERR_NO_ERROR || counts.delivered != count) {
        fprintf(stderr, "delivered %ld of %ld (%ld failed, flush: %s)\n", counts.delivered, count,
                counts.failed, odk_err_name(err));
        return 1;
    }
    printf("produced %ld messages to %s\n", counts.delivered, topic);
    return 0;
}
