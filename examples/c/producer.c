/*
 * Odradek's twin of librdkafka's examples/producer.c: every line read from stdin becomes one
 * message on TOPIC; Ctrl-C or end of input stops, after waiting for outstanding deliveries.
 * The steps are librdkafka's, one for one (c/README.md maps each call).
 *
 *   producer BOOTSTRAP TOPIC < lines
 *
 * Exits 1 if a message could not be queued or delivered.
 * Build: cc producer.c $(pkg-config --cflags --libs odradek)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* sigaction */
#endif
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <odradek.h>

static volatile sig_atomic_t run = 1;

/* SIGINT: leave the input loop. */
static void stop(int sig) {
    (void)sig;
    run = 0;
}

/* Installs `stop` for SIGINT without SA_RESTART, so a blocked fgets returns at once. */
static void on_interrupt(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

struct outcome {
    long delivered;
    long failed;
};

/* The delivery report of one message, once it was written to the broker or failed for good.
 * Called only from odk_poll / odk_flush, on this program's thread. */
static void dr_msg_cb(odk_producer_t *producer, const odk_message_t *msg, void *opaque) {
    (void)producer;
    struct outcome *outcome = opaque;
    if (odk_message_err(msg) != ODK_ERR_NO_ERROR) {
        fprintf(stderr, "%% Delivery failed: %s\n", odk_message_errstr(msg));
        outcome->failed++;
        return;
    }
    size_t len = 0;
    odk_message_value(msg, &len);
    fprintf(stderr, "%% Delivered %zu bytes to %s [%d] at offset %lld\n", len,
            odk_message_topic(msg), odk_message_partition(msg), (long long)odk_message_offset(msg));
    outcome->delivered++;
}

int main(int argc, char **argv) {
    odk_producer_t *producer; /* the producer handle */
    odk_conf_t *conf;         /* configuration, copied by odk_producer_new */
    char errstr[512];         /* error messages of odk_* calls */
    char buf[512];            /* one line of input */
    struct outcome outcome = {0, 0};
    int failed_to_queue = 0;

    if (argc != 3) {
        fprintf(stderr, "%% Usage: %s <bootstrap servers> <topic>\n", argv[0]);
        return 1;
    }
    const char *brokers = argv[1];
    const char *topic = argv[2];

    /* 1. Configuration: property names are librdkafka's (and Kafka's). */
    conf = odk_conf_new();
    if (odk_conf_set(conf, "bootstrap.servers", brokers, errstr, sizeof errstr) != ODK_ERR_NO_ERROR) {
        fprintf(stderr, "%s\n", errstr);
        odk_conf_destroy(conf);
        return 1;
    }

    /* 2. The delivery report callback, and where its opaque argument points. */
    odk_conf_set_dr_msg_cb(conf, dr_msg_cb);
    odk_conf_set_opaque(conf, &outcome);

    /* 3. The producer. Unlike rd_kafka_new, odk_producer_new copies the configuration: the
     * program destroys its own either way. */
    producer = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    if (!producer) {
        fprintf(stderr, "%% Failed to create new producer: %s\n", errstr);
        return 1;
    }

    on_interrupt();
    fprintf(stderr, "%% Each line typed becomes a message (an empty line only serves delivery\n"
                    "%% reports); Ctrl-C or Ctrl-D ends.\n");

    /* 4. One message per line. */
    while (run && fgets(buf, sizeof buf, stdin)) {
        size_t len = strlen(buf);
        if (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
        if (len == 0) {
            odk_poll(producer, 0); /* nothing to send: serve delivery reports */
            continue;
        }

        odk_err_t err;
        for (;;) {
            /* Queued, not sent yet: the outcome arrives as a delivery report. The value is
             * copied (ODK_MSG_F_COPY), so buf can be reused at once. */
            err = odk_produce(producer, topic, ODK_PARTITION_ANY, NULL, 0, buf, len, NULL, 0,
                              ODK_MSG_F_COPY, NULL);
            if (err != ODK_ERR__QUEUE_FULL) break;
            /* Too many messages outstanding: serve reports for up to a second, then retry. */
            fprintf(stderr, "%% Queue full, waiting for deliveries\n");
            odk_poll(producer, 1000);
        }
        if (err != ODK_ERR_NO_ERROR) {
            fprintf(stderr, "%% Failed to produce to topic %s: %s\n", topic, odk_err_string(err));
            failed_to_queue++;
        } else {
            fprintf(stderr, "%% Enqueued message (%zu bytes) for topic %s\n", len, topic);
        }

        /* 5. Serve delivery reports regularly: without odk_poll they wait, and count against
         * queue.buffering.max.messages. */
        odk_poll(producer, 0);
    }

    /* 6. Send whatever is still queued and wait (up to 10 s) for every delivery report. */
    fprintf(stderr, "%% Flushing final messages..\n");
    odk_flush(producer, 10 * 1000);
    int outstanding = odk_producer_outq_len(producer);
    if (outstanding > 0) fprintf(stderr, "%% %d message(s) were not delivered\n", outstanding);

    /* 7. Done. */
    odk_producer_destroy(producer);
    fprintf(stderr, "%% %ld message(s) delivered, %ld failed\n", outcome.delivered, outcome.failed);
    return failed_to_queue || outcome.failed || outstanding > 0 ? 1 : 0;
}
