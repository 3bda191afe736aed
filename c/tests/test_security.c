/*
 * TLS and SASL through libodradek against a broker with secured listeners:
 * tests/security/client.sh starts Apache Kafka with them and sets ODRADEK_SECURITY_LISTENERS
 * (a NAME=host:port file) and ODRADEK_SECURITY_PKI. Without them the program says so and
 * succeeds (c/test.sh runs it that way).
 *
 * Round trips over SSL, mTLS (encrypted key) and SASL_SSL (SCRAM-SHA-512, OAUTHBEARER through
 * the token callback); a wrong password reaches the delivery report and the error callback as
 * ODK_ERR__AUTHENTICATION, quickly.
 */
#include "harness.h"

static char listeners_file[1024], pki_dir[1024];

static int secured(void) {
    const char *l = getenv("ODRADEK_SECURITY_LISTENERS");
    const char *p = getenv("ODRADEK_SECURITY_PKI");
    if (!l || !p) return 0;
    snprintf(listeners_file, sizeof listeners_file, "%s", l);
    snprintf(pki_dir, sizeof pki_dir, "%s", p);
    return 1;
}

static void listener(const char *name, char *out, size_t size) {
    FILE *f = fopen(listeners_file, "r");
    CHECK(f != NULL, "cannot open %s", listeners_file);
    char line[512];
    size_t n = strlen(name);
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, name, n) == 0 && line[n] == '=') {
            line[strcspn(line, "\r\n")] = '\0';
            snprintf(out, size, "%s", line + n + 1);
        }
    }
    fclose(f);
    CHECK(out[0] != '\0', "no %s listener", name);
}

static void pki(const char *name, char *out, size_t size) { snprintf(out, size, "%s/%s", pki_dir, name); }

static void read_file(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot open %s", path);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
}

/* A configuration for `listener` with the given name/value pairs (NULL-ended). */
static odk_conf_t *conf_for(const char *name, const char *first, ...) {
    char errstr[512], addr[256];
    listener(name, addr, sizeof addr);
    odk_conf_t *conf = odk_conf_new();
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", addr, errstr, sizeof errstr), errstr);
    CHECK_OK(odk_conf_set(conf, "socket.connection.setup.timeout.ms", "5000", errstr, sizeof errstr), errstr);
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        CHECK_OK(odk_conf_set(conf, k, v, errstr, sizeof errstr), errstr);
    }
    va_end(ap);
    return conf;
}

struct outcome {
    int delivered, failed;
    odk_err_t last_err;
    int errors;
    odk_err_t error_cb_err;
    char error_cb_reason[512];
};

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    struct outcome *o = opaque;
    if (odk_message_err(m) == ODK_ERR_NO_ERROR) {
        o->delivered++;
    } else {
        o->failed++;
        o->last_err = odk_message_err(m);
    }
}

static void on_error(odk_err_t err, const char *reason, void *opaque) {
    struct outcome *o = opaque;
    o->errors++;
    o->error_cb_err = err;
    snprintf(o->error_cb_reason, sizeof o->error_cb_reason, "%s", reason);
}

/* Produces 5 records to partition 0 of a fresh topic and reads them back. */
static void round_trip(odk_conf_t *conf, const char *tag) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, tag);
    static struct outcome o;
    memset(&o, 0, sizeof o);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_conf_set_opaque(conf, &o);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    CHECK(p != NULL, "%s: %s", tag, errstr);
    for (int i = 0; i < 5; i++) {
        char v[16];
        int n = snprintf(v, sizeof v, "%d", i);
        odk_err_t e = odk_produce(p, topic, 0, NULL, 0, v, (size_t)n, NULL, 0, 0, NULL);
        CHECK(e == ODK_ERR_NO_ERROR, "%s: produce: %s", tag, odk_err_name(e));
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    CHECK(o.delivered == 5 && o.failed == 0, "%s: %d delivered, %d failed (%s)", tag, o.delivered, o.failed,
          odk_err_name(o.last_err));
    odk_producer_destroy(p);

    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    CHECK(c != NULL, "%s: %s", tag, errstr);
    odk_topic_partition_t tp = {topic, 0, ODK_OFFSET_BEGINNING, 0};
    CHECK_OK(odk_consumer_assign(c, &tp, 1, errstr, sizeof errstr), errstr);
    int got = 0;
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (got < 5 && now_ms() < deadline) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (!m) continue;
        if (odk_message_err(m) == ODK_ERR_NO_ERROR) {
            size_t len = 0;
            const char *v = odk_message_value(m, &len);
            char want[16];
            int n = snprintf(want, sizeof want, "%d", got);
            CHECK(v && len == (size_t)n && memcmp(v, want, len) == 0, "%s: record %d", tag, got);
            got++;
        }
        odk_message_destroy(m);
    }
    CHECK(got == 5, "%s: read %d of 5", tag, got);
    odk_consumer_destroy(c);
}

static int token_calls;

/* A token callback answering an unsecured JWT (alg none), which the broker's unsecured
 * validator accepts. */
static odk_err_t token_cb(odk_oauthbearer_token_t *token, const char *config, void *opaque) {
    (void)config;
    (void)opaque;
    token_calls++;
    /* {"alg":"none"} . {"sub":"c-user","exp":4102444800,"iat":1700000000} . */
    const char *jwt = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjLXVzZXIiLCJleHAiOjQxMDI0NDQ4MDAsImlhdCI6MTcwMDAwMDAwMH0.";
    const char *ext[] = {"traceId", "7"};
    char errstr[256];
    return odk_oauthbearer_token_set(token, jwt, 4102444800000LL, "c-user", ext, 2, errstr, sizeof errstr);
}

static void round_trips(void) {
    char ca[1100], cert[1100], key[1100], password_file[1100], password[256];
    pki("ca.pem", ca, sizeof ca);
    pki("client.pem", cert, sizeof cert);
    pki("client-encrypted.key", key, sizeof key);
    pki("client-key-password.txt", password_file, sizeof password_file);
    read_file(password_file, password, sizeof password);

    odk_conf_t *conf = conf_for("SSL", "security.protocol", "SSL", "ssl.ca.location", ca, NULL);
    round_trip(conf, "c-sec-ssl");
    odk_conf_destroy(conf);

    conf = conf_for("MTLS", "security.protocol", "SSL", "ssl.ca.location", ca, "ssl.certificate.location", cert,
                    "ssl.key.location", key, "ssl.key.password", password, NULL);
    round_trip(conf, "c-sec-mtls");
    odk_conf_destroy(conf);

    conf = conf_for("SASL_SSL", "security.protocol", "SASL_SSL", "ssl.ca.location", ca, "sasl.mechanism",
                    "SCRAM-SHA-512", "sasl.username", "alice", "sasl.password", "alice-secret", NULL);
    round_trip(conf, "c-sec-scram");
    odk_conf_destroy(conf);

    conf = conf_for("SASL_SSL", "security.protocol", "SASL_SSL", "ssl.ca.location", ca, "sasl.mechanism",
                    "OAUTHBEARER", NULL);
    odk_conf_set_oauthbearer_token_cb(conf, token_cb);
    round_trip(conf, "c-sec-oauth");
    odk_conf_destroy(conf);
    CHECK(token_calls >= 1, "the token callback was not called");
}

/* What a managed-Kafka quick start hands out: librdkafka's names, hostname verification on,
 * and the usual producer tuning. */
static void cloud_style_configuration(void) {
    char ca[1100];
    pki("ca.pem", ca, sizeof ca);
    odk_conf_t *conf = conf_for("SASL_SSL", "security.protocol", "SASL_SSL", "sasl.mechanisms", "PLAIN",
                                "sasl.username", "alice", "sasl.password", "alice-secret", "ssl.ca.location", ca,
                                "ssl.endpoint.identification.algorithm", "https", "acks", "all",
                                "enable.idempotence", "true", "linger.ms", "5", "compression.type", "zstd",
                                "socket.keepalive.enable", "true", "client.id", "ccloud-c-client", NULL);
    round_trip(conf, "c-sec-cloud");
    odk_conf_destroy(conf);
}

static void wrong_password(void) {
    char ca[1100], errstr[512];
    pki("ca.pem", ca, sizeof ca);
    odk_conf_t *conf = conf_for("SASL_SSL", "security.protocol", "SASL_SSL", "ssl.ca.location", ca, "sasl.mechanism",
                                "SCRAM-SHA-256", "sasl.username", "alice", "sasl.password", "Jk2-not-hers", NULL);
    static struct outcome o;
    memset(&o, 0, sizeof o);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_conf_set_error_cb(conf, on_error);
    odk_conf_set_opaque(conf, &o);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    int64_t started = now_ms();
    CHECK_OK(odk_produce(p, "c-sec-denied", ODK_PARTITION_ANY, NULL, 0, "x", 1, NULL, 0, 0, NULL), "produce");
    while ((o.failed == 0 || o.errors == 0) && now_ms() - started < 15000) odk_poll(p, 100);
    CHECK(o.failed == 1 && o.last_err == ODK_ERR__AUTHENTICATION, "delivery: %d failed, %s", o.failed,
          odk_err_name(o.last_err));
    CHECK(o.errors >= 1 && o.error_cb_err == ODK_ERR__AUTHENTICATION, "error_cb: %d, %s", o.errors,
          odk_err_name(o.error_cb_err));
    CHECK(strstr(o.error_cb_reason, "Jk2-not-hers") == NULL, "the password leaked: %s", o.error_cb_reason);
    CHECK(now_ms() - started < 10000, "took %lld ms", (long long)(now_ms() - started));
    odk_producer_destroy(p);
}

int main(void) {
    if (!secured()) {
        printf("ok - skipped: ODRADEK_SECURITY_LISTENERS / ODRADEK_SECURITY_PKI not set\n");
        return 0;
    }
    RUN(round_trips);
    RUN(cloud_style_configuration);
    RUN(wrong_password);
    return 0;
}
