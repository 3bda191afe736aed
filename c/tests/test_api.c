/*
 * The parts of the API that need no broker: error codes, configuration, and that NULL or
 * invalid arguments give error codes instead of crashes or leaks.
 */
#include "harness.h"

#define NOWHERE "127.0.0.1:1"

static void error_codes(void) {
    CHECK(ODK_ERR_NO_ERROR == 0);
    CHECK(ODK_ERR__MSG_TIMED_OUT == -192 && ODK_ERR__QUEUE_FULL == -184);
    CHECK(ODK_ERR__PARTITION_EOF == -191 && ODK_ERR_UNKNOWN_TOPIC_OR_PART == 3);
    CHECK(strcmp(odk_err_name(ODK_ERR__MSG_TIMED_OUT), "_MSG_TIMED_OUT") == 0);
    CHECK(strcmp(odk_err_name(ODK_ERR_MSG_SIZE_TOO_LARGE), "MSG_SIZE_TOO_LARGE") == 0);
    CHECK(strcmp(odk_err_name(0), "NO_ERROR") == 0);
    CHECK(strcmp(odk_err_name(123456), "UNKNOWN") == 0);
    CHECK(strcmp(odk_err_string(ODK_ERR_UNKNOWN_TOPIC_OR_PART), "Broker: Unknown topic or partition") == 0,
          "%s", odk_err_string(ODK_ERR_UNKNOWN_TOPIC_OR_PART));
    CHECK(strcmp(odk_err_string(-100000), "Unknown error code") == 0);
    CHECK(odk_err_is_retriable(ODK_ERR__TRANSPORT));
    CHECK(odk_err_is_retriable(ODK_ERR_NOT_LEADER_FOR_PARTITION));
    CHECK(!odk_err_is_retriable(ODK_ERR__INVALID_ARG));
    CHECK(odk_err_is_fatal(ODK_ERR__FATAL) && odk_err_is_fatal(ODK_ERR_PRODUCER_FENCED));
    CHECK(!odk_err_is_fatal(ODK_ERR__TRANSPORT) && !odk_err_is_fatal(ODK_ERR_NO_ERROR));
}

static void configuration(void) {
    char errstr[256], value[64];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "linger.ms", "7", errstr, sizeof errstr), errstr);
    CHECK(errstr[0] == '\0');
    CHECK(odk_conf_set(conf, "no.such.property", "1", errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(strstr(errstr, "no.such.property") != NULL, "%s", errstr);
    CHECK(odk_conf_set(conf, "linger.ms", "soon", errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(strstr(errstr, "linger.ms") != NULL, "%s", errstr);
    /* A tiny buffer is truncated and still terminated; NULL is allowed. */
    char tiny[4] = {'x', 'x', 'x', 'x'};
    CHECK(odk_conf_set(conf, "no.such", "1", tiny, sizeof tiny) == ODK_ERR__INVALID_ARG);
    CHECK(tiny[3] == '\0' && strlen(tiny) == 3);
    CHECK(odk_conf_set(conf, "no.such", "1", NULL, 0) == ODK_ERR__INVALID_ARG);

    size_t size = sizeof value;
    CHECK_OK(odk_conf_get(conf, "linger.ms", value, &size), "get");
    CHECK(strcmp(value, "7") == 0 && size == 2);
    odk_conf_t *copy = odk_conf_dup(conf);
    CHECK_OK(odk_conf_set(conf, "linger.ms", NULL, errstr, sizeof errstr), errstr);
    size = sizeof value;
    CHECK(odk_conf_get(conf, "linger.ms", value, &size) == ODK_ERR__NOENT);
    size = sizeof value;
    CHECK_OK(odk_conf_get(copy, "linger.ms", value, &size), "get copy");
    CHECK(strcmp(value, "7") == 0);
    odk_conf_destroy(copy);
    odk_conf_destroy(conf);
}

static void null_arguments(void) {
    char errstr[256];
    CHECK(odk_conf_set(NULL, "a", "b", errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_conf_t *conf = odk_conf_new();
    CHECK(odk_conf_set(conf, NULL, "b", errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_conf_get(NULL, "a", NULL, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_conf_get(conf, "a", NULL, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_conf_dup(NULL) == NULL);
    odk_conf_set_dr_msg_cb(NULL, NULL);
    odk_conf_set_opaque(NULL, NULL);
    odk_conf_destroy(conf);
    odk_conf_destroy(NULL);

    CHECK(odk_producer_new(NULL, errstr, sizeof errstr) == NULL);
    CHECK(strstr(errstr, "NULL") != NULL, "%s", errstr);
    CHECK(odk_consumer_new(NULL, errstr, sizeof errstr) == NULL);
    CHECK(odk_admin_new(NULL, errstr, sizeof errstr) == NULL);
    odk_producer_destroy(NULL);
    odk_consumer_destroy(NULL);
    odk_admin_destroy(NULL);
    odk_message_destroy(NULL);
    odk_topic_partitions_destroy(NULL, 3);
    odk_topic_infos_destroy(NULL, 3);

    CHECK(odk_produce(NULL, "t", ODK_PARTITION_ANY, NULL, 0, NULL, 0, NULL, 0, 0, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_poll(NULL, 0) == 0);
    CHECK(odk_flush(NULL, 0) == ODK_ERR__INVALID_ARG);
    CHECK(odk_producer_outq_len(NULL) == 0);
    CHECK(odk_consumer_poll(NULL, 0) == NULL);
    CHECK(odk_consumer_close(NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_subscribe(NULL, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_assign(NULL, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_commit(NULL, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_seek(NULL, "t", 0, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_create_topics(NULL, NULL, 0, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);

    size_t len = 99;
    CHECK(odk_message_topic(NULL) == NULL);
    CHECK(odk_message_partition(NULL) == -1 && odk_message_offset(NULL) == -1);
    CHECK(odk_message_key(NULL, &len) == NULL && len == 0);
    CHECK(odk_message_value(NULL, NULL) == NULL);
    CHECK(odk_message_err(NULL) == ODK_ERR__INVALID_ARG);
    CHECK(strcmp(odk_message_errstr(NULL), "") == 0);
    CHECK(odk_message_header_count(NULL) == 0);
    CHECK(odk_message_opaque(NULL) == NULL);
}

static void invalid_configurations(void) {
    char errstr[256];
    /* Each key is valid alone; together they conflict, which creation reports. */
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "enable.idempotence", "true", errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "acks", "1", errstr, sizeof errstr), errstr);
    CHECK(odk_producer_new(conf, errstr, sizeof errstr) == NULL);
    CHECK(strstr(errstr, "acks") != NULL, "%s", errstr);
    odk_conf_destroy(conf);
}

static void bad_produce_arguments(void) {
    char errstr[256];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    CHECK(odk_produce(p, NULL, ODK_PARTITION_ANY, NULL, 0, "v", 1, NULL, 0, 0, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_produce(p, "", ODK_PARTITION_ANY, NULL, 0, "v", 1, NULL, 0, 0, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_produce(p, "t", -7, NULL, 0, "v", 1, NULL, 0, 0, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_produce(p, "t", 0, NULL, 0, "v", 1, NULL, 0, 0x40, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_produce(p, "t", 0, NULL, 0, "v", 1, NULL, 2, 0, NULL) == ODK_ERR__INVALID_ARG);
    odk_header_t bad_header = {NULL, "x", 1};
    CHECK(odk_produce(p, "t", 0, NULL, 0, "v", 1, &bad_header, 1, 0, NULL) == ODK_ERR__INVALID_ARG);
    /* ODK_MSG_F_FREE hands the value over even when the call fails: no leak, no double free
     * (valgrind and ASan check both). */
    char *owned = malloc(16);
    memcpy(owned, "owned by library", 16);
    CHECK(odk_produce(p, NULL, 0, NULL, 0, owned, 16, NULL, 0, ODK_MSG_F_FREE, NULL) == ODK_ERR__INVALID_ARG);
    owned = malloc(8);
    memcpy(owned, "12345678", 8);
    CHECK(odk_produce(NULL, "t", 0, NULL, 0, owned, 8, NULL, 0, ODK_MSG_F_FREE, NULL) == ODK_ERR__INVALID_ARG);
    CHECK(odk_producer_outq_len(p) == 0);
    CHECK(odk_flush(p, 0) == ODK_ERR_NO_ERROR);
    odk_producer_destroy(p);
}

static void consumer_without_group(void) {
    char errstr[256];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    const char *topics[] = {"t"};
    CHECK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(strstr(errstr, "group.id") != NULL, "%s", errstr);
    CHECK(odk_consumer_subscribe(c, NULL, 1, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_consumer_seek(c, "t", 0, 0, errstr, sizeof errstr) == ODK_ERR__STATE, "%s", errstr);
    odk_topic_partition_t bad = {NULL, 0, 0, 0};
    CHECK(odk_consumer_assign(c, &bad, 1, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_topic_partition_t *parts = NULL;
    size_t cnt = 7;
    CHECK_OK(odk_consumer_assignment(c, &parts, &cnt), "assignment");
    CHECK(parts == NULL && cnt == 0);
    CHECK(odk_consumer_poll(c, 0) == NULL);
    CHECK_OK(odk_consumer_close(c), "close");
    odk_message_t *m = odk_consumer_poll(c, 0);
    CHECK(m != NULL && odk_message_err(m) == ODK_ERR__STATE);
    odk_message_destroy(m);
    odk_consumer_destroy(c);
}

static int all_down_seen;
static int other_errors_seen;
static void count_errors(odk_err_t err, const char *reason, void *opaque) {
    (void)opaque;
    if (err == ODK_ERR__ALL_BROKERS_DOWN && strstr(reason, "brokers are down") != NULL)
        all_down_seen++;
    else
        other_errors_seen++;
}

/* A consumer whose bootstrap server cannot be reached hears of it once through its error
 * callback, served by odk_consumer_poll, and keeps polling. */
static void consumer_error_cb_reports_all_brokers_down(void) {
    char errstr[256];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "group.id", "events", errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "reconnect.backoff.max.ms", "50", errstr, sizeof errstr), errstr);
    odk_conf_set_error_cb(conf, count_errors);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    const char *topics[] = {"events-topic"};
    CHECK_OK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr), errstr);
    int64_t deadline = now_ms() + 15000;
    while (all_down_seen == 0 && now_ms() < deadline)
        odk_message_destroy(odk_consumer_poll(c, 100));
    for (int i = 0; i < 10; i++)
        odk_message_destroy(odk_consumer_poll(c, 50));
    CHECK(all_down_seen == 1, "all brokers down told %d times", all_down_seen);
    CHECK(other_errors_seen == 0, "%d other errors", other_errors_seen);
    CHECK_OK(odk_consumer_close(c), "close");
    odk_consumer_destroy(c);
}

/* The same for an admin client: its error callback is served by odk_admin_poll, and a call
 * that cannot reach a broker times out without losing the event. */
static void admin_error_cb_reports_all_brokers_down(void) {
    char errstr[256];
    all_down_seen = 0;
    other_errors_seen = 0;
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "reconnect.backoff.max.ms", "50", errstr, sizeof errstr), errstr);
    odk_conf_set_error_cb(conf, count_errors);
    odk_admin_t *a = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(a != NULL, "%s", errstr);
    odk_topic_info_t *topics = NULL;
    size_t cnt = 0;
    CHECK(odk_admin_list_topics(a, &topics, &cnt, 1000, errstr, sizeof errstr) != ODK_ERR_NO_ERROR,
          "listed topics of a cluster that does not exist");
    int64_t deadline = now_ms() + 15000;
    int served = 0;
    while (all_down_seen == 0 && now_ms() < deadline)
        served += odk_admin_poll(a, 100);
    served += odk_admin_poll(a, 200);
    CHECK(all_down_seen == 1, "all brokers down told %d times", all_down_seen);
    CHECK(other_errors_seen == 0, "%d other errors", other_errors_seen);
    CHECK(served == 1, "odk_admin_poll counted %d callbacks", served);
    odk_admin_destroy(a);
}

static int log_lines, debug_lines, malformed_lines;
static void count_log(int level, const char *fac, const char *buf, void *opaque) {
    (void)opaque;
    log_lines++;
    if (level == 7)
        debug_lines++;
    if (fac == NULL || strncmp(fac, "odradek", 7) != 0 || buf == NULL || level < 3 || level > 7)
        malformed_lines++;
}

/* Serves `p` for `ms` milliseconds. */
static void poll_for(odk_producer_t *p, int ms) {
    int64_t until = now_ms() + ms;
    while (now_ms() < until)
        odk_poll(p, 20);
}

/* The log callback takes the core's log on the polling thread: with `debug` its contexts (level
 * 7, the module as facility, nothing on stderr), without only warnings and errors. */
static void log_cb_gets_the_debug_contexts(void) {
    char errstr[256];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", NOWHERE, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "reconnect.backoff.max.ms", "50", errstr, sizeof errstr), errstr);
    odk_conf_set_log_cb(conf, count_log);
    odk_conf_t *quiet = odk_conf_dup(conf);
    CHECK_OK(odk_conf_set(conf, "debug", "broker,metadata", errstr, sizeof errstr), errstr);

    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL, "%s", errstr);
    int64_t deadline = now_ms() + 15000;
    while (debug_lines == 0 && now_ms() < deadline)
        odk_poll(p, 100);
    CHECK(debug_lines > 0, "no debug line reached the log callback (%d lines)", log_lines);
    CHECK(malformed_lines == 0, "%d lines with a bad level, facility or text", malformed_lines);
    odk_producer_destroy(p);

    log_lines = debug_lines = 0;
    p = odk_producer_new(quiet, errstr, sizeof errstr);
    CHECK(p != NULL, "%s", errstr);
    poll_for(p, 1500);
    CHECK(debug_lines == 0, "%d debug lines without `debug`", debug_lines);
    CHECK(malformed_lines == 0, "%d malformed lines", malformed_lines);
    odk_producer_destroy(p);

    odk_conf_destroy(conf);
    odk_conf_destroy(quiet);
}

int main(void) {
    RUN(error_codes);
    RUN(configuration);
    RUN(null_arguments);
    RUN(invalid_configurations);
    RUN(bad_produce_arguments);
    RUN(consumer_without_group);
    RUN(consumer_error_cb_reports_all_brokers_down);
    RUN(admin_error_cb_reports_all_brokers_down);
    RUN(log_cb_gets_the_debug_contexts);
    return 0;
}
