/*
 * librdkafka's properties through the C API (docs/configuration.md): every property of
 * librdkafka's table at its default builds a producer and a consumer that still round-trip,
 * and realistic service configurations are accepted.
 */
#include "harness.h"

#include <libgen.h>

#define MAX_PROPS 400

struct props {
    int count;
    char *names[MAX_PROPS];
    char *values[MAX_PROPS];
};

/* client-core/src/librdkafka_properties.tsv, found from this file's path (or ODK_PROPERTIES_TSV). */
static FILE *open_table(void) {
    const char *env = getenv("ODK_PROPERTIES_TSV");
    if (env) return fopen(env, "r");
    char here[4096];
    snprintf(here, sizeof here, "%s", __FILE__);
    char path[4200];
    snprintf(path, sizeof path, "%s/../../client-core/src/librdkafka_properties.tsv", dirname(here));
    return fopen(path, "r");
}

/* Every property of `scope` ('P' or 'C') and '*' with a default, as librdkafka spells it. */
static void defaults(char scope, struct props *out) {
    FILE *f = open_table();
    CHECK(f != NULL, "cannot open librdkafka_properties.tsv");
    char line[4096];
    out->count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = '\0';
        char *fields[7] = {0};
        int n = 0;
        for (char *p = line; n < 7; n++) {
            fields[n] = p;
            char *tab = strchr(p, '\t');
            if (!tab) {
                n++;
                break;
            }
            *tab = '\0';
            p = tab + 1;
        }
        CHECK(n >= 6, "a table line has %d fields", n);
        const char *name = fields[1], *cp = fields[2], *def = fields[4], *kind = fields[5];
        /* Callables (set through the API), librdkafka's own feature list, unset defaults and
         * the shell command librdkafka abbreviates are not strings to set. */
        if (strcmp(kind, "see dedicated API") == 0 || strcmp(name, "builtin.features") == 0) continue;
        if (!(cp[0] == scope || cp[0] == '*') || def[0] == '\0' || strchr(def, '\\')) continue;
        CHECK(out->count < MAX_PROPS);
        out->names[out->count] = strdup(name);
        out->values[out->count] = strdup(def);
        out->count++;
    }
    fclose(f);
}

static void free_props(struct props *p) {
    for (int i = 0; i < p->count; i++) {
        free(p->names[i]);
        free(p->values[i]);
    }
    p->count = 0;
}

/* `base` (test_conf) with every property of `p` set, then the overrides (NULL-ended pairs). */
static odk_conf_t *conf_with(const struct props *p, const char *const *overrides) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    for (int i = 0; i < p->count; i++) {
        odk_err_t e = odk_conf_set(conf, p->names[i], p->values[i], errstr, sizeof errstr);
        CHECK(e == ODK_ERR_NO_ERROR, "%s=%s refused: %s", p->names[i], p->values[i], errstr);
    }
    for (; overrides && overrides[0]; overrides += 2) {
        CHECK_OK(odk_conf_set(conf, overrides[0], overrides[1], errstr, sizeof errstr), errstr);
    }
    return conf;
}

static void every_property_at_its_default_still_round_trips(void) {
    char topic[128], group[160], errstr[512];
    unique_name(topic, sizeof topic, "c-defaults");
    snprintf(group, sizeof group, "g-%s", topic);
    create_topic(topic, 1);
    struct props p;
    defaults('P', &p);
    CHECK(p.count > 80, "%d producer properties", p.count);
    /* The table's allow.auto.create.topics default is the consumer's (false). */
    const char *producer_overrides[] = {"linger.ms", "1", "allow.auto.create.topics", "true", NULL};
    odk_conf_t *conf = conf_with(&p, producer_overrides);
    free_props(&p);
    odk_producer_t *producer = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(producer != NULL, "%s", errstr);
    for (int i = 0; i < 5; i++) {
        char value[16];
        int len = snprintf(value, sizeof value, "v%d", i);
        CHECK_OK(odk_produce(producer, topic, 0, NULL, 0, value, (size_t)len, NULL, 0, ODK_MSG_F_COPY, NULL), "");
    }
    CHECK_OK(odk_flush(producer, DEADLINE_MS), "flush");
    odk_producer_destroy(producer);

    defaults('C', &p);
    CHECK(p.count > 80, "%d consumer properties", p.count);
    const char *consumer_overrides[] = {"group.id", group, "auto.offset.reset", "earliest", NULL};
    conf = conf_with(&p, consumer_overrides);
    free_props(&p);
    odk_consumer_t *consumer = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(consumer != NULL, "%s", errstr);
    const char *topics[] = {topic};
    CHECK_OK(odk_consumer_subscribe(consumer, topics, 1, errstr, sizeof errstr), errstr);
    int seen[5] = {0}, got = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (got < 5 && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(consumer, 200);
        if (!m) continue;
        if (odk_message_err(m) == ODK_ERR_NO_ERROR) {
            size_t len = 0;
            const char *v = odk_message_value(m, &len);
            CHECK(v && len == 2 && v[0] == 'v' && v[1] >= '0' && v[1] <= '4');
            if (!seen[v[1] - '0']++) got++;
        }
        odk_message_destroy(m);
    }
    CHECK(got == 5, "read %d of 5", got);
    CHECK_OK(odk_consumer_close(consumer), "close");
    odk_consumer_destroy(consumer);
}

static void realistic_configurations_are_accepted(void) {
    char errstr[512];
    /* A tuned producer (librdkafka's performance guidance), and cloud settings with debug on. */
    const char *producers[][40] = {
        {"linger.ms", "50", "batch.num.messages", "10000", "batch.size", "1000000",
         "queue.buffering.max.kbytes", "1048576", "compression.codec", "lz4",
         "socket.nagle.disable", "true", "sticky.partitioning.linger.ms", "10",
         "enable.idempotence", "true", "acks", "all", "statistics.interval.ms", "60000", NULL},
        {"socket.keepalive.enable", "true", "metadata.max.age.ms", "60000",
         "topic.metadata.refresh.interval.ms", "30000", "broker.address.family", "v4",
         "debug", "broker,protocol", "api.version.request", "true", "enable.metrics.push", "false",
         "client.dns.lookup", "use_all_dns_ips", NULL},
    };
    for (size_t i = 0; i < sizeof producers / sizeof *producers; i++) {
        odk_conf_t *conf = conf_with(&(struct props){0}, producers[i]);
        odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
        odk_conf_destroy(conf);
        CHECK(p != NULL, "producer %zu: %s", i, errstr);
        odk_producer_destroy(p);
    }
    /* A tuned rack-aware consumer, and a KIP-848 consumer. */
    const char *consumers[][40] = {
        {"group.id", "g", "fetch.wait.max.ms", "100", "queued.min.messages", "10000",
         "fetch.queue.backoff.ms", "0", "queued.max.messages.kbytes", "65536",
         "client.rack", "use1-az1", "enable.auto.offset.store", "false", "enable.partition.eof", "true", NULL},
        {"group.id", "g", "group.protocol", "consumer", "group.remote.assignor", "uniform",
         "group.instance.id", "worker-1", "max.poll.interval.ms", "60000", NULL},
    };
    for (size_t i = 0; i < sizeof consumers / sizeof *consumers; i++) {
        odk_conf_t *conf = conf_with(&(struct props){0}, consumers[i]);
        odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
        odk_conf_destroy(conf);
        CHECK(c != NULL, "consumer %zu: %s", i, errstr);
        CHECK_OK(odk_consumer_close(c), "close");
        odk_consumer_destroy(c);
    }
}

int main(void) {
    RUN(every_property_at_its_default_still_round_trips);
    RUN(realistic_configurations_are_accepted);
    return 0;
}
