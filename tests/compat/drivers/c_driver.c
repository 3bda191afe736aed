/* Compatibility-matrix driver for Odradek's C library (c/include/odradek.h, libodradek).
 *
 *   c_driver ACTION --bootstrap HOST:PORT [--topic T] [--codecs a,b] [--count N] ...
 *
 * Speaks the driver protocol of tests/compat/README.md ("Drivers"): the last stdout line is one
 * JSON object {"ok":..,"error":..,"detail":{..}}; `member` prints event lines before it.
 * Built by tests/compat/run: cc c_driver.c -I c/include -L target/debug -lodradek.
 */
#define _POSIX_C_SOURCE 200809L
#include <odradek.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *arg_bootstrap = "", *arg_topic = "", *arg_codecs = "none,gzip,snappy,lz4,zstd",
                  *arg_partitioner = "murmur2", *arg_group = "", *arg_stop = "", *arg_security = NULL,
                  *arg_protocol = "classic";
static int arg_count = 100, arg_partitions = 4, arg_replication = 1;
static double arg_timeout = 60;
static double deadline;
static char err[2048];
static const char *step = "start";

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}
static double left(void) { return deadline - now(); }
static int left_ms(void) { double l = left(); return l > 0 ? (int)(l * 1000) : 0; }

static void json_str(FILE *f, const char *s) {
    if (!s) { fputs("null", f); return; }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, sizeof err, fmt, ap);
    va_end(ap);
    return -1;
}

static void on_alarm(int sig) {
    (void)sig;
    /* Not async-signal-safe in general; the process exits right after. */
    printf("{\"ok\":false,\"error\":\"timeout (driver deadline %.0f s) during: %s\",\"detail\":{}}\n", arg_timeout, step);
    fflush(stdout);
    _exit(3);
}

/* ---- the shared data set (README "Data set") ---- */
static int rec_key(int i, char *buf) { /* returns length, -1 for null */
    if (i % 5 == 4) return -1;
    return sprintf(buf, "k%d", i);
}
static int rec_value(int i, unsigned char *buf) {
    if (i % 11 == 10 && i % 5 != 4) return -1;
    int n = i % 64;
    for (int j = 0; j < n; j++) buf[j] = (unsigned char)((i * 31 + j) % 256);
    return n + sprintf((char *)buf + n, "#%d", i);
}
static int rec_headers(int i, odk_header_t *h, char *x) {
    if (i % 3 == 2) return 0;
    sprintf(x, "x%d", i);
    h[0] = (odk_header_t){"h", x, strlen(x)};
    h[1] = (odk_header_t){"h", "dup", 3};
    h[2] = (odk_header_t){"empty", "", 0};
    return 3;
}

/* --security FILE: key=value lines with librdkafka's property names (README "Drivers"), set on
 * every client; checked once by load_security(), and the values (a password among them) are
 * never printed. */
#define MAX_SECURITY 16
static char *sec_key[MAX_SECURITY], *sec_val[MAX_SECURITY];
static int sec_n;

static odk_conf_t *conf_new(void) {
    odk_conf_t *c = odk_conf_new();
    odk_conf_set(c, "bootstrap.servers", arg_bootstrap, err, sizeof err);
    for (int i = 0; i < sec_n; i++) odk_conf_set(c, sec_key[i], sec_val[i], NULL, 0);
    return c;
}

static int load_security(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return fail("--security %s: cannot open", path);
    char line[8192];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *k = line;
        while (*k == ' ' || *k == '\t') k++;
        if (!*k || *k == '#') continue;
        char *eq = strchr(k, '=');
        if (!eq) { rc = fail("--security %s: a line without '='", path); break; }
        if (sec_n == MAX_SECURITY) { rc = fail("--security %s: more than %d properties", path, MAX_SECURITY); break; }
        *eq = 0;
        for (char *e = eq - 1; e >= k && (*e == ' ' || *e == '\t'); e--) *e = 0;
        sec_key[sec_n] = strdup(k);
        sec_val[sec_n] = strdup(eq + 1);
        sec_n++;
    }
    fclose(f);
    /* Every property must be known to the library (the value of a password is not shown). */
    odk_conf_t *c = odk_conf_new();
    for (int i = 0; !rc && i < sec_n; i++) {
        char e[512];
        if (odk_conf_set(c, sec_key[i], sec_val[i], e, sizeof e) != 0)
            rc = strstr(sec_key[i], "password") ? fail("--security: %s refused", sec_key[i])
                                                : fail("--security: %s refused: %s", sec_key[i], e);
    }
    odk_conf_destroy(c);
    return rc;
}
static int conf_set(odk_conf_t *c, const char *k, const char *v) {
    char e[512];
    if (odk_conf_set(c, k, v, e, sizeof e) != 0) return fail("config %s=%s: %s", k, v, e);
    return 0;
}

/* ---- producing with delivery reports ---- */
typedef struct { int done, failed; int32_t *partition; int64_t *offset; char first[512]; } reports_t;

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    reports_t *r = opaque;
    size_t idx = (size_t)odk_message_opaque(m);
    if (odk_message_err(m) != 0) {
        if (!r->failed++) snprintf(r->first, sizeof r->first, "%s", odk_message_errstr(m));
    } else {
        r->partition[idx] = odk_message_partition(m);
        r->offset[idx] = odk_message_offset(m);
    }
    r->done++;
}

static odk_producer_t *producer_new(reports_t *r, const char *const *kv) {
    odk_conf_t *c = conf_new();
    if (conf_set(c, "linger.ms", "5")) { odk_conf_destroy(c); return NULL; }
    for (; kv && kv[0]; kv += 2)
        if (conf_set(c, kv[0], kv[1])) { odk_conf_destroy(c); return NULL; }
    odk_conf_set_dr_msg_cb(c, on_delivery);
    odk_conf_set_opaque(c, r);
    char e[512];
    odk_producer_t *p = odk_producer_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (!p) fail("producer: %s", e);
    return p;
}

static int produce(odk_producer_t *p, const char *topic, int32_t part, const void *k, int kl, const void *v, int vl,
                   const odk_header_t *h, size_t hn, size_t idx) {
    for (;;) {
        odk_err_t e = odk_produce(p, topic, part, kl < 0 ? NULL : k, kl < 0 ? 0 : (size_t)kl, vl < 0 ? NULL : (void *)v,
                                  vl < 0 ? 0 : (size_t)vl, h, hn, ODK_MSG_F_COPY, (void *)idx);
        if (e == 0) return 0;
        if (e != ODK_ERR__QUEUE_FULL) return fail("produce: %s", odk_err_string(e));
        odk_poll(p, 100);
    }
}

static int finish(odk_producer_t *p, reports_t *r, int n, const char *what) {
    step = "flush";
    odk_flush(p, left_ms());
    while (r->done < n && left() > 0) odk_poll(p, 100);
    if (r->done < n) return fail("%s: %d of %d delivery reports before the deadline", what, r->done, n);
    if (r->failed) return fail("%s: %d of %d deliveries failed, first: %s", what, r->failed, n, r->first);
    return 0;
}

/* ---- reading one partition from offset 0 ---- */
typedef int (*check_fn)(int i, const odk_message_t *m);

/* isolation.level of read_partition's consumer */
static const char *read_isolation = "read_uncommitted";

static int read_partition(const char *topic, int count, check_fn check) {
    step = "reading";
    odk_conf_t *c = conf_new();
    conf_set(c, "auto.offset.reset", "earliest");
    conf_set(c, "isolation.level", read_isolation);
    char e[512];
    odk_consumer_t *k = odk_consumer_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (!k) return fail("consumer: %s", e);
    odk_topic_partition_t tp = {topic, 0, ODK_OFFSET_BEGINNING, 0};
    int rc = 0, got = 0;
    if (odk_consumer_assign(k, &tp, 1, e, sizeof e) != 0) rc = fail("assign: %s", e);
    while (!rc && got < count) {
        if (left() <= 0) { rc = fail("read %s-0: %d of %d records before the deadline", topic, got, count); break; }
        odk_message_t *m = odk_consumer_poll(k, 200);
        if (!m) continue;
        odk_err_t me = odk_message_err(m);
        if (me == ODK_ERR__PARTITION_EOF) { odk_message_destroy(m); continue; }
        if (me != 0) rc = fail("consume %s-0: %s", topic, odk_message_errstr(m));
        else if (check(got, m)) rc = -1;
        else got++;
        odk_message_destroy(m);
    }
    odk_consumer_close(k);
    odk_consumer_destroy(k);
    return rc;
}

static void hex(char *out, const void *p, int n) {
    if (n < 0) { strcpy(out, "null"); return; }
    const unsigned char *b = p;
    for (int i = 0; i < n && i < 20; i++) sprintf(out + 2 * i, "%02x", b[i]);
    if (n == 0) out[0] = 0;
}

static int check_record(int i, const odk_message_t *m) {
    char kb[32], xb[32];
    unsigned char vb[128];
    odk_header_t h[3];
    int kl = rec_key(i, kb), vl = rec_value(i, vb), hn = rec_headers(i, h, xb);
    size_t gkl, gvl;
    const void *gk = odk_message_key(m, &gkl), *gv = odk_message_value(m, &gvl);
    int ok = (kl < 0 ? gk == NULL : gk && gkl == (size_t)kl && !memcmp(gk, kb, kl)) &&
             (vl < 0 ? gv == NULL : gv && gvl == (size_t)vl && !memcmp(gv, vb, vl)) &&
             odk_message_header_count(m) == (size_t)hn;
    for (int j = 0; ok && j < hn; j++) {
        const void *n, *v;
        size_t nl, vl2;
        ok = odk_message_header_get(m, j, &n, &nl, &v, &vl2) == 0 && nl == strlen(h[j].name) &&
             !memcmp(n, h[j].name, nl) && v && vl2 == h[j].value_len && !memcmp(v, h[j].value, vl2);
    }
    if (ok) return 0;
    char a[64], b[64], c[64], d[64];
    hex(a, gk, gk ? (int)gkl : -1); hex(b, gv, gv ? (int)gvl : -1); hex(c, kb, kl); hex(d, vb, vl);
    return fail("record %d: got key=%s value=%s headers=%zu, want key=%s value=%s headers=%d", i, a, b,
                odk_message_header_count(m), c, d, hn);
}

static char idem_buf[32];
static int check_idem(int i, const odk_message_t *m) {
    size_t vl;
    const void *v = odk_message_value(m, &vl);
    int n = sprintf(idem_buf, "i%d", i);
    if (!v || vl != (size_t)n || memcmp(v, idem_buf, n)) return fail("read back: record %d is not i%d", i, i);
    return 0;
}

/* ---- actions ---- */
static int per_codec(int (*fn)(const char *codec, const char *topic)) {
    char codecs[256], detail[8192] = "{", errors[6144] = "";
    snprintf(codecs, sizeof codecs, "%s", arg_codecs);
    int ok = 1;
    for (char *save, *codec = strtok_r(codecs, ",", &save); codec; codec = strtok_r(NULL, ",", &save)) {
        char topic[512];
        snprintf(topic, sizeof topic, "%s-%s", arg_topic, codec);
        err[0] = 0;
        int rc = fn(codec, topic);
        FILE *f = fmemopen(detail + strlen(detail), sizeof detail - strlen(detail) - 2, "w");
        fprintf(f, "%s", strlen(detail) > 1 ? "," : "");
        json_str(f, codec);
        fputc(':', f);
        json_str(f, rc ? err : "ok");
        fclose(f);
        if (rc) {
            ok = 0;
            snprintf(errors + strlen(errors), sizeof errors - strlen(errors), "%s%s: %s", errors[0] ? "; " : "", codec, err);
        }
    }
    strcat(detail, "}");
    printf("{\"ok\":%s,\"error\":", ok ? "true" : "false");
    json_str(stdout, ok ? NULL : errors);
    printf(",\"detail\":%s}\n", detail);
    return 0;
}

static int write_codec(const char *codec, const char *topic) {
    int n = arg_count;
    reports_t r = {0};
    r.partition = calloc(n, sizeof *r.partition);
    r.offset = calloc(n, sizeof *r.offset);
    const char *kv[] = {"compression.type", codec, NULL};
    odk_producer_t *p = producer_new(&r, kv);
    int rc = p ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        char kb[32], xb[32];
        unsigned char vb[128];
        odk_header_t h[3];
        int kl = rec_key(i, kb), vl = rec_value(i, vb), hn = rec_headers(i, h, xb);
        rc = produce(p, topic, 0, kb, kl, vb, vl, hn ? h : NULL, hn, i);
    }
    if (!rc) rc = finish(p, &r, n, codec);
    for (int i = 1; !rc && i < n; i++)
        if (r.offset[i] != r.offset[0] + i) rc = fail("offsets not contiguous at %d", i);
    odk_producer_destroy(p);
    free(r.partition);
    free(r.offset);
    return rc;
}

static int verify_codec(const char *codec, const char *topic) {
    (void)codec;
    return read_partition(topic, arg_count, check_record);
}

static int act_keyed(void) {
    int n = arg_count;
    reports_t r = {0};
    r.partition = calloc(n, sizeof *r.partition);
    r.offset = calloc(n, sizeof *r.offset);
    const char *kv[] = {"partitioner", "murmur2_random", NULL};
    odk_producer_t *p = producer_new(&r, strcmp(arg_partitioner, "murmur2") ? NULL : kv);
    int rc = p ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        char kb[32];
        int kl = sprintf(kb, "k%d", i);
        rc = produce(p, arg_topic, ODK_PARTITION_ANY, kb, kl, "v", 1, NULL, 0, i);
    }
    if (!rc) rc = finish(p, &r, n, "keyed");
    odk_producer_destroy(p);
    if (!rc) {
        printf("{\"ok\":true,\"error\":null,\"detail\":{\"partitions\":[");
        for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", r.partition[i]);
        printf("]}}\n");
    }
    return rc;
}

static int act_fill(void) {
    int n = arg_count;
    reports_t r = {0};
    r.partition = calloc(n, sizeof *r.partition);
    r.offset = calloc(n, sizeof *r.offset);
    odk_producer_t *p = producer_new(&r, NULL);
    int rc = p ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        char kb[32], vb[32];
        int kl = sprintf(kb, "k%d", i), vl = sprintf(vb, "g%d", i);
        rc = produce(p, arg_topic, i % arg_partitions, kb, kl, vb, vl, NULL, 0, i);
    }
    if (!rc) rc = finish(p, &r, n, "fill");
    odk_producer_destroy(p);
    if (!rc) printf("{\"ok\":true,\"error\":null,\"detail\":{}}\n");
    return rc;
}

static int act_member(void) {
    odk_conf_t *c = conf_new();
    int rc = conf_set(c, "group.id", arg_group) || conf_set(c, "auto.offset.reset", "earliest") ||
             conf_set(c, "enable.auto.commit", "false");
    if (!rc && !strcmp(arg_protocol, "consumer"))
        rc = conf_set(c, "group.protocol", "consumer"); /* KIP-848: the broker assigns */
    else if (!rc)
        rc = conf_set(c, "partition.assignment.strategy", "roundrobin") ||
             conf_set(c, "heartbeat.interval.ms", "500") || conf_set(c, "session.timeout.ms", "10000");
    char e[512];
    odk_consumer_t *k = rc ? NULL : odk_consumer_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (rc) return -1;
    if (!k) return fail("consumer: %s", e);
    const char *topics[] = {arg_topic};
    if (odk_consumer_subscribe(k, topics, 1, e, sizeof e) != 0) rc = fail("subscribe: %s", e);
    char last[512] = "-";
    step = "member";
    while (!rc && access(arg_stop, F_OK) != 0) {
        if (left() <= 0) { rc = fail("member: no stop signal before the deadline"); break; }
        odk_message_t *m = odk_consumer_poll(k, 200);
        odk_topic_partition_t *parts = NULL;
        size_t cnt = 0;
        char cur[512] = "[";
        if (odk_consumer_assignment(k, &parts, &cnt) == 0) {
            int ps[64], np = 0;
            for (size_t i = 0; i < cnt && np < 64; i++) ps[np++] = parts[i].partition;
            for (int i = 0; i < np; i++)          /* sort (tiny) */
                for (int j = i + 1; j < np; j++)
                    if (ps[j] < ps[i]) { int t = ps[i]; ps[i] = ps[j]; ps[j] = t; }
            for (int i = 0; i < np; i++) sprintf(cur + strlen(cur), "%s%d", i ? "," : "", ps[i]);
            odk_topic_partitions_destroy(parts, cnt);
        }
        strcat(cur, "]");
        if (strcmp(cur, last)) {
            printf("{\"event\":\"assignment\",\"partitions\":%s}\n", cur);
            fflush(stdout);
            strcpy(last, cur);
        }
        if (!m) continue;
        odk_err_t me = odk_message_err(m);
        if (me == 0) {
            printf("{\"event\":\"record\",\"partition\":%d,\"offset\":%lld}\n", odk_message_partition(m),
                   (long long)odk_message_offset(m));
            fflush(stdout);
        } else if (me != ODK_ERR__PARTITION_EOF) {
            rc = fail("consume: %s", odk_message_errstr(m));
        }
        odk_message_destroy(m);
    }
    odk_consumer_close(k);
    odk_consumer_destroy(k);
    if (!rc) printf("{\"ok\":true,\"error\":null,\"detail\":{}}\n");
    return rc;
}

static int act_idempotence(void) {
    int n = arg_count;
    reports_t r = {0};
    r.partition = calloc(n, sizeof *r.partition);
    r.offset = calloc(n, sizeof *r.offset);
    const char *kv[] = {"enable.idempotence", "true", "acks", "all", NULL};
    odk_producer_t *p = producer_new(&r, kv);
    int rc = p ? 0 : -1;
    for (int i = 0; !rc && i < n; i++) {
        char vb[32];
        int vl = sprintf(vb, "i%d", i);
        rc = produce(p, arg_topic, 0, NULL, -1, vb, vl, NULL, 0, i);
    }
    if (!rc) rc = finish(p, &r, n, "idempotent produce");
    for (int i = 1; !rc && i < n; i++)
        if (r.offset[i] != r.offset[0] + i) rc = fail("delivery offsets not contiguous in send order at %d", i);
    odk_producer_destroy(p);
    if (!rc) rc = read_partition(arg_topic, n, check_idem);
    if (!rc) printf("{\"ok\":true,\"error\":null,\"detail\":{}}\n");
    return rc;
}

/* The values read_partition must see, in order (transactions). */
static char txn_want[64][16];
static int check_txn(int i, const odk_message_t *m) {
    size_t vl;
    const void *v = odk_message_value(m, &vl);
    size_t n = strlen(txn_want[i]);
    if (!v || vl != n || memcmp(v, txn_want[i], n)) return fail("read back: record %d is not %s", i, txn_want[i]);
    return 0;
}

static int txn_call(odk_err_t e, const char *what, const char *msg, uint32_t flags) {
    if (e == 0) return 0;
    return fail("%s: %s (%s%s%s)", what, msg, odk_err_name(e), flags & ODK_ERR_F_FATAL ? ", fatal" : "",
                flags & ODK_ERR_F_TXN_REQUIRES_ABORT ? ", requires abort" : "");
}

/* commit c1, abort ab, commit c2 (10 records each, partition 0); read_committed sees c1 and c2,
 * read_uncommitted all three in order. */
static int act_transactions(void) {
    enum { N = 10 };
    static const char *tags[] = {"c1", "ab", "c2"};
    char tid[600], e[512];
    snprintf(tid, sizeof tid, "compat-%s", arg_topic);
    reports_t r = {0};
    r.partition = calloc(3 * N, sizeof *r.partition);
    r.offset = calloc(3 * N, sizeof *r.offset);
    const char *kv[] = {"transactional.id", tid, NULL};
    odk_producer_t *p = producer_new(&r, kv);
    int rc = p ? 0 : -1;
    uint32_t flags = 0;
    int timeout = left_ms() > 35000 ? 30000 : left_ms() / 2;
    step = "init_transactions";
    if (!rc) rc = txn_call(odk_producer_init_transactions(p, timeout, &flags, e, sizeof e), step, e, flags);
    for (int t = 0; !rc && t < 3; t++) {
        step = "begin_transaction";
        rc = txn_call(odk_producer_begin_transaction(p, &flags, e, sizeof e), step, e, flags);
        for (int i = 0; !rc && i < N; i++) {
            char vb[16];
            int vl = sprintf(vb, "%s-%d", tags[t], i);
            rc = produce(p, arg_topic, 0, NULL, -1, vb, vl, NULL, 0, (size_t)(t * N + i));
        }
        if (rc) break;
        if (t == 1) {
            /* Send the records first, so the aborted batch is really in the log. */
            step = "abort_transaction";
            odk_flush(p, timeout);
            rc = txn_call(odk_producer_abort_transaction(p, timeout, &flags, e, sizeof e), step, e, flags);
        } else {
            step = "commit_transaction";
            rc = txn_call(odk_producer_commit_transaction(p, timeout, &flags, e, sizeof e), step, e, flags);
        }
    }
    step = "delivery reports";
    while (!rc && r.done < 3 * N && left() > 0) odk_poll(p, 100);
    if (p) odk_producer_destroy(p);
    free(r.partition);
    free(r.offset);
    if (rc) return rc;
    for (int i = 0; i < N; i++) {
        sprintf(txn_want[i], "c1-%d", i);
        sprintf(txn_want[N + i], "c2-%d", i);
    }
    read_isolation = "read_committed";
    rc = read_partition(arg_topic, 2 * N, check_txn);
    read_isolation = "read_uncommitted";
    if (rc) return rc;
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < N; i++) sprintf(txn_want[t * N + i], "%s-%d", tags[t], i);
    rc = read_partition(arg_topic, 3 * N, check_txn);
    if (!rc) printf("{\"ok\":true,\"error\":null,\"detail\":{}}\n");
    return rc;
}

static int list_has(odk_admin_t *a, const char *topic, int *has) {
    odk_topic_info_t *t = NULL;
    size_t n = 0;
    char e[512];
    if (odk_admin_list_topics(a, &t, &n, left_ms(), e, sizeof e) != 0) return fail("list_topics: %s", e);
    *has = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, arg_topic)) *has = t[i].partition_cnt ? t[i].partition_cnt : -1;
    odk_topic_infos_destroy(t, n);
    (void)topic;
    return 0;
}

static int act_admin(void) {
    odk_conf_t *c = conf_new();
    char e[512];
    odk_admin_t *a = odk_admin_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (!a) return fail("admin: %s", e);
    odk_new_topic_t nt = {arg_topic, 3, (int16_t)arg_replication, NULL, 0};
    int32_t res = 0, has = 0, rc = 0;
    step = "create_topics";
    if (odk_admin_create_topics(a, &nt, 1, &res, left_ms(), e, sizeof e) != 0) rc = fail("create_topics: %s", e);
    step = "list_topics";
    while (!rc && !(rc = list_has(a, arg_topic, &has)) && !has) {
        if (left() <= 0) { rc = fail("created topic not listed before the deadline"); break; }
        nap_ms(100);
    }
    /* odk_admin_list_topics carries the partition count: that is the C API's describe. */
    if (!rc && has != 3) rc = fail("list_topics: %d partitions, want 3", has);
    step = "create_topics again";
    if (!rc) {
        odk_err_t r2 = odk_admin_create_topics(a, &nt, 1, &res, left_ms(), e, sizeof e);
        if (r2 == 0) rc = fail("second create_topics succeeded (want TOPIC_ALREADY_EXISTS)");
        else if (res != ODK_ERR_TOPIC_ALREADY_EXISTS) rc = fail("second create_topics: %s (want TOPIC_ALREADY_EXISTS)", e);
    }
    step = "delete_topics";
    const char *names[] = {arg_topic};
    if (!rc && odk_admin_delete_topics(a, names, 1, &res, left_ms(), e, sizeof e) != 0) rc = fail("delete_topics: %s", e);
    while (!rc && !(rc = list_has(a, arg_topic, &has)) && has) {
        if (left() <= 0) { rc = fail("deleted topic still listed at the deadline"); break; }
        nap_ms(100);
    }
    odk_admin_destroy(a);
    if (!rc) printf("{\"ok\":true,\"error\":null,\"detail\":{}}\n");
    return rc;
}

/* ---- the quotas scenario (README "Scenarios": quotas) ---- */
static const char *arg_client_id = "";
static int arg_size = 8192, arg_fetch_bytes = 0;
static double arg_seconds = 23, arg_warmup = 3;

/* librdkafka's throttle_cb (odk_conf_set_throttle_cb), served by odk_poll / odk_consumer_poll:
 * each report of a non-zero throttle time is counted. */
static long long throttle_events = 0;
static void on_throttle(const char *broker, int32_t broker_id, int throttle_ms, void *opaque) {
    (void)broker; (void)broker_id; (void)opaque;
    if (throttle_ms > 0) throttle_events++;
}
static void throttle_detail(char *out, size_t n) {
    snprintf(out, n, "\"throttled\":%s,\"throttle_report\":\"throttle_cb: %lld throttle events\"",
             throttle_events > 0 ? "true" : "false", throttle_events);
}

typedef struct { double t0; int size; long long bytes, records; int failed; char first[512]; } qprod_t;
static void on_quota_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    qprod_t *q = opaque;
    double at = now() - q->t0;
    if (odk_message_err(m) != 0) {
        if (!q->failed++) snprintf(q->first, sizeof q->first, "%s", odk_message_errstr(m));
    } else if (at >= arg_warmup && at < arg_seconds) {
        q->bytes += q->size;
        q->records++;
    }
}

/* --size-byte values to partition 0 as fast as the client is let for --seconds; the payload
 * acknowledged in [--warmup, --seconds). */
static int act_quota_produce(void) {
    qprod_t q = {0};
    q.size = arg_size;
    odk_conf_t *c = conf_new();
    int rc = conf_set(c, "client.id", arg_client_id) || conf_set(c, "batch.size", "32768") ||
             conf_set(c, "linger.ms", "0") || conf_set(c, "queue.buffering.max.kbytes", "1024");
    if (rc) { odk_conf_destroy(c); return -1; }
    odk_conf_set_dr_msg_cb(c, on_quota_delivery);
    odk_conf_set_throttle_cb(c, on_throttle);
    odk_conf_set_opaque(c, &q);
    char e[512];
    odk_producer_t *p = odk_producer_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (!p) return fail("producer: %s", e);
    char *value = malloc(arg_size);
    memset(value, 'q', arg_size);
    step = "producing";
    q.t0 = now();
    while (now() - q.t0 < arg_seconds) {
        odk_err_t pe = odk_produce(p, arg_topic, 0, NULL, 0, value, arg_size, NULL, 0, ODK_MSG_F_COPY, NULL);
        if (pe == ODK_ERR__QUEUE_FULL) odk_poll(p, 50);
        else if (pe != 0) return fail("produce: %s", odk_err_string(pe));
        else odk_poll(p, 0);
    }
    odk_poll(p, 600); /* the last throttle reports */
    if (q.failed) return fail("a delivery failed: %s", q.first);
    char thr[256];
    throttle_detail(thr, sizeof thr);
    printf("{\"ok\":true,\"error\":null,\"detail\":{\"bytes\":%lld,\"records\":%lld,\"window\":%.1f,%s}}\n",
           q.bytes, q.records, arg_seconds - arg_warmup, thr);
    fflush(stdout);
    _exit(0); /* records still buffered at the end of the run are not waited for */
}

/* Partition 0 of --topic from offset 0 with both fetch limits at --fetch-bytes; from the first
 * record on, the value bytes received in [--warmup, --seconds). */
static int act_quota_consume(void) {
    char fb[32];
    snprintf(fb, sizeof fb, "%d", arg_fetch_bytes);
    odk_conf_t *c = conf_new();
    int rc = conf_set(c, "client.id", arg_client_id) || conf_set(c, "auto.offset.reset", "earliest") ||
             conf_set(c, "max.partition.fetch.bytes", fb) || conf_set(c, "fetch.max.bytes", fb);
    if (rc) { odk_conf_destroy(c); return -1; }
    odk_conf_set_throttle_cb(c, on_throttle);
    char e[512];
    odk_consumer_t *k = odk_consumer_new(c, e, sizeof e);
    odk_conf_destroy(c);
    if (!k) return fail("consumer: %s", e);
    odk_topic_partition_t tp = {arg_topic, 0, ODK_OFFSET_BEGINNING, 0};
    if (odk_consumer_assign(k, &tp, 1, e, sizeof e) != 0) return fail("assign: %s", e);
    double t0 = -1;
    long long bytes = 0, records = 0, total = 0;
    int exhausted = 0;
    step = "consuming";
    while (t0 < 0 || now() - t0 < arg_seconds) {
        if (left() <= 0) return fail("%lld records read before the deadline", total);
        odk_message_t *m = odk_consumer_poll(k, 50);
        if (m) {
            odk_err_t me = odk_message_err(m);
            if (me == 0) {
                double t = now();
                if (t0 < 0) t0 = t;
                size_t vl = 0;
                odk_message_value(m, &vl);
                total++;
                if (t - t0 >= arg_warmup && t - t0 < arg_seconds) { bytes += (long long)vl; records++; }
            } else if (me != ODK_ERR__PARTITION_EOF) {
                rc = fail("consume: %s", odk_message_errstr(m));
            }
            odk_message_destroy(m);
            if (rc) return rc;
        }
        if (total >= arg_count && now() - t0 < arg_seconds) { exhausted = 1; break; }
    }
    odk_message_t *m = odk_consumer_poll(k, 600); /* the last throttle reports */
    if (m) odk_message_destroy(m);
    char thr[256];
    throttle_detail(thr, sizeof thr);
    printf("{\"ok\":true,\"error\":null,\"detail\":{\"bytes\":%lld,\"records\":%lld,\"window\":%.1f,\"exhausted\":%s,%s}}\n",
           bytes, records, arg_seconds - arg_warmup, exhausted ? "true" : "false", thr);
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv) {
    const char *action = argc > 1 ? argv[1] : "";
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i] + (strncmp(argv[i], "--", 2) ? 0 : 2), *v = argv[i + 1];
        if (!strcmp(k, "bootstrap")) arg_bootstrap = v;
        else if (!strcmp(k, "topic")) arg_topic = v;
        else if (!strcmp(k, "codecs")) arg_codecs = v;
        else if (!strcmp(k, "count")) arg_count = atoi(v);
        else if (!strcmp(k, "partitions")) arg_partitions = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(k, "partitioner")) arg_partitioner = v;
        else if (!strcmp(k, "replication")) arg_replication = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(k, "group")) arg_group = v;
        else if (!strcmp(k, "protocol")) arg_protocol = v;
        else if (!strcmp(k, "stop")) arg_stop = v;
        else if (!strcmp(k, "timeout")) arg_timeout = atof(v);
        else if (!strcmp(k, "security")) arg_security = v;
        else if (!strcmp(k, "client-id")) arg_client_id = v;
        else if (!strcmp(k, "size")) arg_size = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(k, "fetch-bytes")) arg_fetch_bytes = atoi(v);
        else if (!strcmp(k, "seconds")) arg_seconds = atof(v);
        else if (!strcmp(k, "warmup")) arg_warmup = atof(v);
    }
    deadline = now() + arg_timeout;
    signal(SIGALRM, on_alarm);
    alarm((unsigned)arg_timeout + 5);
    int rc = 0;
    if (arg_security && load_security(arg_security)) rc = -1;
    else if (!strcmp(action, "write")) rc = per_codec(write_codec);
    else if (!strcmp(action, "verify")) rc = per_codec(verify_codec);
    else if (!strcmp(action, "keyed")) rc = act_keyed();
    else if (!strcmp(action, "fill")) rc = act_fill();
    else if (!strcmp(action, "member")) rc = act_member();
    else if (!strcmp(action, "idempotence")) rc = act_idempotence();
    else if (!strcmp(action, "transactions")) rc = act_transactions();
    else if (!strcmp(action, "admin")) rc = act_admin();
    else if (!strcmp(action, "quota_produce")) rc = act_quota_produce();
    else if (!strcmp(action, "quota_consume")) rc = act_quota_consume();
    else if (!strcmp(action, "info")) {
        printf("{\"ok\":true,\"error\":null,\"detail\":{\"version\":\"odradek (C API, libodradek)\"}}\n");
        rc = 0;
    } else rc = fail("unknown action %s", action);
    if (rc) {
        printf("{\"ok\":false,\"error\":");
        json_str(stdout, err);
        printf(",\"detail\":{}}\n");
    }
    fflush(stdout);
    return 0;
}
