/*
 * Client quotas: the throttle callback when a client-id quota throttles a producer
 * (producer_byte_rate), a consumer (consumer_byte_rate) and an admin client
 * (request_percentage), served by odk_poll / odk_flush, odk_consumer_poll and odk_admin_poll
 * on the calling thread; the quota admin calls, round trip and Kafka's errors for bad input.
 * Every test uses client ids and users of its own and removes the quotas it set.
 */
#include <math.h>
#include <pthread.h>

#include "harness.h"

#define RATE 65536.0
#define VALUE_SIZE 8192

struct throttles {
    pthread_t thread;
    int calls;
    int throttled;          /* calls with throttle_time_ms > 0 */
    int max_ms;
    int32_t broker_id;
    char broker_name[256];
    int wrong_thread;
    int bad_name;
};

static void on_throttle(const char *broker_name, int32_t broker_id, int throttle_time_ms,
                        void *opaque) {
    struct throttles *t = opaque;
    t->calls++;
    if (!pthread_equal(pthread_self(), t->thread)) t->wrong_thread++;
    CHECK(broker_name != NULL && throttle_time_ms >= 0);
    /* librdkafka's broker name: the broker's host:port (the bootstrap address for node -1). */
    const char *port = strrchr(broker_name, ':');
    if (!port || port == broker_name || strchr(broker_name, '/') ||
        strcmp(port, strrchr(bootstrap(), ':')) != 0) t->bad_name++;
    if (throttle_time_ms > 0) {
        t->throttled++;
        if (throttle_time_ms > t->max_ms) t->max_ms = throttle_time_ms;
        t->broker_id = broker_id;
        snprintf(t->broker_name, sizeof t->broker_name, "%s", broker_name);
    }
}

static odk_admin_t *new_admin(const char *client_id, struct throttles *t) {
    char errstr[512];
    odk_conf_t *conf = test_conf(client_id ? "client.id" : NULL, client_id, NULL);
    if (t) {
        odk_conf_set_throttle_cb(conf, on_throttle);
        odk_conf_set_opaque(conf, t);
    }
    odk_admin_t *a = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(a != NULL, "%s", errstr);
    return a;
}

/* Sets (or with remove, removes) one quota of {client-id=client_id}. */
static void set_client_quota(odk_admin_t *a, const char *client_id, const char *key, double value,
                             bool remove) {
    char errstr[512];
    odk_quota_entity_component_t entity = {"client-id", client_id};
    odk_quota_op_t op = {key, value, remove};
    odk_quota_alteration_t alteration = {&entity, 1, &op, 1};
    int32_t result = -77;
    CHECK_OK(odk_admin_alter_client_quotas(a, &alteration, 1, false, &result, DEADLINE_MS, errstr,
                                           sizeof errstr), errstr);
    CHECK(result == 0);
}

static void throttle_producer(void) {
    char client_id[128], topic[128], errstr[512];
    unique_name(client_id, sizeof client_id, "c-throttled-producer");
    unique_name(topic, sizeof topic, "c-quota-p");
    create_topic(topic, 1);
    odk_admin_t *a = new_admin(NULL, NULL);
    set_client_quota(a, client_id, "producer_byte_rate", RATE, false);

    struct throttles t = {0};
    t.thread = pthread_self();
    t.broker_id = -2;
    odk_conf_t *conf = test_conf("client.id", client_id, "linger.ms", "0", NULL);
    odk_conf_set_throttle_cb(conf, on_throttle);
    odk_conf_set_opaque(conf, &t);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    static char value[VALUE_SIZE];
    memset(value, 'q', sizeof value);
    /* One record per request: past the quota's window a request is throttled for about a
     * record's worth of time (8 KiB at 64 KiB/s). */
    size_t sent = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (t.throttled == 0) {
        CHECK(now_ms() < deadline && sent < 4u << 20, "sent %zu bytes, %d calls", sent, t.calls);
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, value, sizeof value, NULL, 0, ODK_MSG_F_COPY,
                             NULL), "produce");
        CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
        sent += sizeof value;
    }
    CHECK(t.broker_id >= 0 && t.max_ms > 0 && t.max_ms < 30000, "%d ms from %d", t.max_ms,
          (int)t.broker_id);
    CHECK(t.wrong_thread == 0 && t.bad_name == 0, "%s", t.broker_name);
    odk_poll(p, 0);
    odk_producer_destroy(p);
    set_client_quota(a, client_id, "producer_byte_rate", 0, true);
    odk_admin_destroy(a);
}

static void throttle_consumer(void) {
    char client_id[128], topic[128], errstr[512];
    unique_name(client_id, sizeof client_id, "c-throttled-consumer");
    unique_name(topic, sizeof topic, "c-quota-c");
    create_topic(topic, 1);
    /* 1 MiB, unthrottled. */
    odk_conf_t *conf = test_conf("linger.ms", "5", NULL);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    static char value[VALUE_SIZE];
    memset(value, 'c', sizeof value);
    for (int i = 0; i < 128; i++) {
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, value, sizeof value, NULL, 0, ODK_MSG_F_COPY,
                             NULL), "produce");
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    odk_producer_destroy(p);

    odk_admin_t *a = new_admin(NULL, NULL);
    set_client_quota(a, client_id, "consumer_byte_rate", RATE, false);
    struct throttles t = {0};
    t.thread = pthread_self();
    conf = test_conf("client.id", client_id, "fetch.max.bytes", "65536",
                     "max.partition.fetch.bytes", "65536", NULL);
    odk_conf_set_throttle_cb(conf, on_throttle);
    odk_conf_set_opaque(conf, &t);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    odk_topic_partition_t tp = {topic, 0, ODK_OFFSET_BEGINNING, 0};
    CHECK_OK(odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr), errstr);
    int records = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (t.throttled == 0) {
        CHECK(now_ms() < deadline, "%d records, %d calls", records, t.calls);
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (m) {
            records += odk_message_err(m) == ODK_ERR_NO_ERROR;
            odk_message_destroy(m);
        }
    }
    CHECK(t.broker_id >= 0 && t.max_ms > 0, "%d ms", t.max_ms);
    CHECK(t.wrong_thread == 0 && t.bad_name == 0, "%s", t.broker_name);
    odk_consumer_close(c);
    odk_consumer_destroy(c);
    set_client_quota(a, client_id, "consumer_byte_rate", 0, true);
    odk_admin_destroy(a);
}

static void throttle_admin(void) {
    char client_id[128], errstr[512];
    unique_name(client_id, sizeof client_id, "c-throttled-admin");
    odk_admin_t *a = new_admin(NULL, NULL);
    CHECK(odk_admin_poll(a, 0) == 0); /* no throttle callback: nothing to serve */
    CHECK(odk_admin_poll(NULL, 0) == 0);
    /* 0.01% of a thread: a few requests exhaust it (a request quota's throttle is at most one
     * window). */
    set_client_quota(a, client_id, "request_percentage", 0.01, false);
    struct throttles t = {0};
    t.thread = pthread_self();
    odk_admin_t *throttled = new_admin(client_id, &t);
    int64_t start = now_ms();
    CHECK(odk_admin_poll(throttled, 100) == 0 && now_ms() - start >= 90);
    int served = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (t.throttled == 0) {
        CHECK(now_ms() < deadline, "%d calls", t.calls);
        odk_topic_info_t *topics = NULL;
        size_t n = 0;
        CHECK_OK(odk_admin_list_topics(throttled, &topics, &n, DEADLINE_MS, errstr, sizeof errstr),
                 errstr);
        odk_topic_infos_destroy(topics, n);
        served += odk_admin_poll(throttled, 0);
    }
    CHECK(served == t.calls && t.wrong_thread == 0 && t.bad_name == 0, "%d of %d", served, t.calls);
    odk_admin_destroy(throttled);
    set_client_quota(a, client_id, "request_percentage", 0, true);
    odk_admin_destroy(a);
}

/* The quotas of exactly `entity` (NULL when it has none); frees nothing. */
static const odk_quota_entry_t *find_entry(const odk_quota_entry_t *entries, size_t cnt,
                                           const odk_quota_entity_component_t *entity, size_t n) {
    for (size_t i = 0; i < cnt; i++) {
        if (entries[i].entity_cnt != n) continue;
        size_t same = 0;
        for (size_t j = 0; j < n; j++) {
            for (size_t k = 0; k < n; k++) {
                const odk_quota_entity_component_t *x = &entries[i].entity[k];
                if (strcmp(x->entity_type, entity[j].entity_type) != 0) continue;
                if ((x->entity_name == NULL) != (entity[j].entity_name == NULL)) continue;
                if (x->entity_name && strcmp(x->entity_name, entity[j].entity_name) != 0) continue;
                same++;
            }
        }
        if (same == n) return &entries[i];
    }
    return NULL;
}

static double value_of(const odk_quota_entry_t *e, const char *key) {
    for (size_t i = 0; e && i < e->value_cnt; i++) {
        if (strcmp(e->values[i].key, key) == 0) return e->values[i].value;
    }
    return -1;
}

static void quota_round_trip(void) {
    char client_id[128], user[128], errstr[512];
    unique_name(client_id, sizeof client_id, "c-quota-client");
    unique_name(user, sizeof user, "c-quota-user");
    odk_admin_t *a = new_admin(NULL, NULL);

    /* {client-id=X}: two keys; {user=U, client-id=<default>}: one. */
    odk_quota_entity_component_t client[] = {{"client-id", client_id}};
    odk_quota_entity_component_t user_default[] = {{"user", user}, {"client-id", NULL}};
    odk_quota_op_t client_ops[] = {{"producer_byte_rate", 1048576, false},
                                   {"consumer_byte_rate", 2097152, false}};
    odk_quota_op_t user_ops[] = {{"producer_byte_rate", 65536, false}};
    odk_quota_alteration_t set[] = {{client, 1, client_ops, 2}, {user_default, 2, user_ops, 1}};
    int32_t results[2] = {-77, -77};
    CHECK_OK(odk_admin_alter_client_quotas(a, set, 2, false, results, DEADLINE_MS, errstr,
                                           sizeof errstr), errstr);
    CHECK(results[0] == 0 && results[1] == 0);

    odk_quota_filter_component_t exact = {"client-id", ODK_QUOTA_MATCH_EXACT, client_id};
    odk_quota_entry_t *entries = NULL;
    size_t cnt = 0;
    CHECK_OK(odk_admin_describe_client_quotas(a, &exact, 1, true, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    CHECK(cnt == 1, "%zu entries", cnt);
    const odk_quota_entry_t *e = find_entry(entries, cnt, client, 1);
    CHECK(e && e->value_cnt == 2 && value_of(e, "producer_byte_rate") == 1048576.0 &&
          value_of(e, "consumer_byte_rate") == 2097152.0);
    odk_quota_entries_destroy(entries, cnt);

    /* The user's default client: a NULL name both ways. */
    odk_quota_filter_component_t by_user[] = {{"user", ODK_QUOTA_MATCH_EXACT, user},
                                              {"client-id", ODK_QUOTA_MATCH_DEFAULT, NULL}};
    CHECK_OK(odk_admin_describe_client_quotas(a, by_user, 2, false, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    e = find_entry(entries, cnt, user_default, 2);
    CHECK(cnt == 1 && e && value_of(e, "producer_byte_rate") == 65536.0);
    odk_quota_entries_destroy(entries, cnt);
    /* Only the user: strict excludes the {user, client-id} entity. */
    CHECK_OK(odk_admin_describe_client_quotas(a, by_user, 1, true, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    CHECK(cnt == 0 && entries == NULL);
    /* Every entity (other tests' too). */
    CHECK_OK(odk_admin_describe_client_quotas(a, NULL, 0, false, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    CHECK(find_entry(entries, cnt, client, 1) && find_entry(entries, cnt, user_default, 2));
    odk_quota_entries_destroy(entries, cnt);

    /* validate_only changes nothing; remove drops a key. */
    odk_quota_op_t change = {"producer_byte_rate", 4096, false};
    odk_quota_alteration_t check_only = {client, 1, &change, 1};
    CHECK_OK(odk_admin_alter_client_quotas(a, &check_only, 1, true, NULL, DEADLINE_MS, errstr,
                                           sizeof errstr), errstr);
    odk_quota_op_t removals[] = {{"producer_byte_rate", 0, true}, {"consumer_byte_rate", NAN, true}};
    odk_quota_alteration_t remove = {client, 1, removals, 1};
    CHECK_OK(odk_admin_alter_client_quotas(a, &remove, 1, false, NULL, DEADLINE_MS, errstr,
                                           sizeof errstr), errstr);
    CHECK_OK(odk_admin_describe_client_quotas(a, &exact, 1, true, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    e = find_entry(entries, cnt, client, 1);
    CHECK(e && e->value_cnt == 1 && value_of(e, "consumer_byte_rate") == 2097152.0);
    odk_quota_entries_destroy(entries, cnt);

    /* Clean up: every quota of both entities. */
    remove.ops = &removals[1];
    odk_quota_alteration_t cleanup[] = {remove, {user_default, 2, removals, 1}};
    CHECK_OK(odk_admin_alter_client_quotas(a, cleanup, 2, false, NULL, DEADLINE_MS, errstr,
                                           sizeof errstr), errstr);
    CHECK_OK(odk_admin_describe_client_quotas(a, &exact, 1, true, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    CHECK(cnt == 0);
    odk_admin_destroy(a);
}

static void bad_quotas(void) {
    char client_id[128], errstr[512];
    unique_name(client_id, sizeof client_id, "c-quota-bad");
    odk_admin_t *a = new_admin(NULL, NULL);
    odk_quota_entity_component_t client[] = {{"client-id", client_id}};
    odk_quota_entity_component_t unknown_type[] = {{"no-such-entity-type", "x"}};
    odk_quota_op_t negative = {"producer_byte_rate", -1, false};
    odk_quota_op_t zero = {"producer_byte_rate", 0, false};
    odk_quota_op_t fractional = {"producer_byte_rate", 1.5, false};
    odk_quota_op_t unknown_key = {"no_such_quota", 10, false};
    odk_quota_op_t good = {"producer_byte_rate", 1024, false};
    odk_quota_alteration_t bad[] = {
        {client, 1, &negative, 1}, {client, 1, &zero, 1}, {client, 1, &fractional, 1},
        {client, 1, &unknown_key, 1}, {unknown_type, 1, &good, 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int32_t result = -77;
        odk_err_t err = odk_admin_alter_client_quotas(a, &bad[i], 1, false, &result, DEADLINE_MS,
                                                      errstr, sizeof errstr);
        CHECK(err == ODK_ERR_INVALID_REQUEST && result == ODK_ERR_INVALID_REQUEST,
              "alteration %zu: %s: %s", i, odk_err_name(err), errstr);
        CHECK(strchr(errstr, '{') != NULL, "%s", errstr); /* names the entity */
    }
    /* One bad alteration fails only its own result. */
    char other[128];
    unique_name(other, sizeof other, "c-quota-good");
    odk_quota_entity_component_t good_entity[] = {{"client-id", other}};
    odk_quota_alteration_t mixed[] = {{good_entity, 1, &good, 1}, {client, 1, &negative, 1}};
    int32_t results[2] = {-77, -77};
    odk_err_t err = odk_admin_alter_client_quotas(a, mixed, 2, true, results, DEADLINE_MS, errstr,
                                                  sizeof errstr);
    CHECK(err == ODK_ERR_INVALID_REQUEST && results[0] == 0 &&
          results[1] == ODK_ERR_INVALID_REQUEST, "%s", odk_err_name(err));
    CHECK(strstr(errstr, client_id) != NULL, "%s", errstr);

    /* Not a number: refused before anything is sent, naming the key. */
    odk_quota_op_t not_a_number = {"consumer_byte_rate", NAN, false};
    odk_quota_alteration_t nan_alteration = {client, 1, &not_a_number, 1};
    err = odk_admin_alter_client_quotas(a, &nan_alteration, 1, false, NULL, DEADLINE_MS, errstr,
                                        sizeof errstr);
    CHECK(err == ODK_ERR__INVALID_ARG && strstr(errstr, "consumer_byte_rate"), "%s", errstr);
    odk_quota_op_t infinite = {"consumer_byte_rate", INFINITY, false};
    nan_alteration.ops = &infinite;
    err = odk_admin_alter_client_quotas(a, &nan_alteration, 1, false, NULL, DEADLINE_MS, errstr,
                                        sizeof errstr);
    CHECK(err == ODK_ERR__INVALID_ARG, "%s", odk_err_name(err));
    /* NULL arrays with counts, NULL strings. */
    odk_quota_alteration_t null_ops = {client, 1, NULL, 1};
    CHECK(odk_admin_alter_client_quotas(a, &null_ops, 1, false, NULL, 0, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_alter_client_quotas(a, NULL, 1, false, NULL, 0, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_alter_client_quotas(NULL, bad, 1, false, NULL, 0, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG);
    odk_quota_entity_component_t null_type[] = {{NULL, "x"}};
    odk_quota_alteration_t bad_entity = {null_type, 1, &good, 1};
    CHECK(odk_admin_alter_client_quotas(a, &bad_entity, 1, false, NULL, 0, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG);
    odk_quota_entity_component_t twice[] = {{"client-id", "x"}, {"client-id", "y"}};
    bad_entity.entity = twice;
    bad_entity.entity_cnt = 2;
    CHECK(odk_admin_alter_client_quotas(a, &bad_entity, 1, false, NULL, 0, errstr, sizeof errstr) ==
          ODK_ERR__INVALID_ARG);

    /* Describe: an unknown entity type is Kafka's UNSUPPORTED_VERSION; bad filters. */
    odk_quota_entry_t *entries = NULL;
    size_t cnt = 0;
    odk_quota_filter_component_t unknown = {"no-such-entity-type", ODK_QUOTA_MATCH_EXACT, "x"};
    err = odk_admin_describe_client_quotas(a, &unknown, 1, false, &entries, &cnt, DEADLINE_MS,
                                           errstr, sizeof errstr);
    CHECK(err == ODK_ERR_UNSUPPORTED_VERSION, "%s: %s", odk_err_name(err), errstr);
    odk_quota_filter_component_t no_name = {"client-id", ODK_QUOTA_MATCH_EXACT, NULL};
    CHECK(odk_admin_describe_client_quotas(a, &no_name, 1, false, &entries, &cnt, 0, errstr,
                                           sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_quota_filter_component_t bad_match = {"client-id", 7, NULL};
    CHECK(odk_admin_describe_client_quotas(a, &bad_match, 1, false, &entries, &cnt, 0, errstr,
                                           sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(strstr(errstr, "7") != NULL, "%s", errstr);
    CHECK(odk_admin_describe_client_quotas(a, NULL, 0, false, NULL, &cnt, 0, errstr,
                                           sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_quota_entries_destroy(NULL, 0);

    /* Nothing was set for the bad entity. */
    odk_quota_filter_component_t exact = {"client-id", ODK_QUOTA_MATCH_EXACT, client_id};
    CHECK_OK(odk_admin_describe_client_quotas(a, &exact, 1, true, &entries, &cnt, DEADLINE_MS,
                                              errstr, sizeof errstr), errstr);
    CHECK(cnt == 0);
    odk_admin_destroy(a);
}

static void quota_calls_time_out(void) {
    char errstr[512];
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", errstr, sizeof errstr), errstr);
    odk_admin_t *a = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(a != NULL, "%s", errstr);
    odk_quota_entry_t *entries = NULL;
    size_t cnt = 0;
    int64_t start = now_ms();
    CHECK(odk_admin_describe_client_quotas(a, NULL, 0, false, &entries, &cnt, 300, errstr,
                                           sizeof errstr) == ODK_ERR__TIMED_OUT);
    odk_quota_entity_component_t client[] = {{"client-id", "x"}};
    odk_quota_op_t op = {"producer_byte_rate", 1024, false};
    odk_quota_alteration_t alteration = {client, 1, &op, 1};
    CHECK(odk_admin_alter_client_quotas(a, &alteration, 1, false, NULL, 300, errstr,
                                        sizeof errstr) == ODK_ERR__TIMED_OUT);
    CHECK(now_ms() - start < 20000);
    odk_admin_destroy(a);
}

int main(void) {
    RUN(throttle_producer);
    RUN(throttle_consumer);
    RUN(throttle_admin);
    RUN(quota_round_trip);
    RUN(bad_quotas);
    RUN(quota_calls_time_out);
    return 0;
}
