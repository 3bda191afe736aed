/*
 * libodradek on a 3-node Apache Kafka while nodes fail (issue 27). Run by
 * c/test_cluster_faults.sh, which starts the cluster; not one of c/test.sh's test_*.c programs
 * (those run against a single broker).
 *
 *   cluster_faults BOOTSTRAP HARNESS CLUSTER_DIR LEADERS_CMD
 *
 * BOOTSTRAP is the cluster's bootstrap list, HARNESS tests/cluster/kafka-cluster.sh, CLUSTER_DIR
 * the directory it started the cluster in, LEADERS_CMD a command that, given
 * `--leaders BOOTSTRAP TOPIC`, prints "PARTITION LEADER" lines (the C API has no metadata call
 * that names partition leaders, so the runner asks Kafka's own TopicCommand).
 *
 * Through odradek.h only: a topic of 6 partitions, RF 3, min.insync.replicas=2; an idempotent
 * acks=all producer (delivery reports; each record's value is "PARTITION:SEQ") and a two-member
 * consumer group (one thread each, session.timeout.ms=20000, a synchronous commit of the stored
 * offsets every second) run while the harness kills the leader of partition 0 and restarts it,
 * pauses a node for 9 s (past the 6 s broker session timeout), kills the active controller and
 * restarts it, and cuts a node off from clients for 10 s. After each fault every partition must
 * be acknowledged again within 90 s; during the cut, every partition another node leads must be
 * acknowledged. At the end: no delivery failed, the group consumed every acknowledged record,
 * a plain (assign-only) consumer reading each partition from its start to its end finds each
 * acknowledged record once, at its acknowledged offset, in send order, and no commit failed
 * with UNKNOWN_MEMBER_ID.
 */
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define PARTITIONS 6
#define PROGRESS_MS 90000
#define MAX_NOTES 8

struct ack {
    int64_t seq;
    int64_t offset;
    int64_t at_ms;
};

struct partition_state {
    struct ack *acks; /* in report order */
    size_t n_acks, cap_acks;
    uint8_t *consumed; /* by the group, indexed by seq */
    size_t cap_consumed;
};

static struct {
    pthread_mutex_t lock;
    struct partition_state parts[PARTITIONS];
    long delivery_failures;
    char failure_notes[MAX_NOTES][256];
    long produce_errors;
    long commits_ok, commits_empty, commit_errors, unknown_member_commits;
    char commit_notes[MAX_NOTES][256];
    long consume_errors;
    char consume_notes[MAX_NOTES][256];
    long consumed_records;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER};

static atomic_bool writing = true;
static atomic_bool consuming = true;
static int64_t started_ms;
static const char *g_bootstrap, *g_harness, *g_dir, *g_leaders_cmd;
static char g_topic[128], g_group[128];

static double elapsed(void) { return (double)(now_ms() - started_ms) / 1000.0; }

static void progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("[%6.1fs] ", elapsed());
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
}

/* Keeps the first MAX_NOTES notes of a kind (st.lock held). */
static void note(char notes[MAX_NOTES][256], long count, const char *fmt, ...) {
    if (count > MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes[count - 1], sizeof notes[0], fmt, ap);
    va_end(ap);
}

static bool parse_value(const odk_message_t *m, int *partition, int64_t *seq) {
    size_t len = 0;
    const char *v = odk_message_value(m, &len);
    char buf[32];
    if (!v || len == 0 || len >= sizeof buf) return false;
    memcpy(buf, v, len);
    buf[len] = '\0';
    int p;
    long long s;
    if (sscanf(buf, "%d:%lld", &p, &s) != 2 || p < 0 || p >= PARTITIONS || s < 0) return false;
    *partition = p;
    *seq = s;
    return true;
}

static void sleep_ms(int64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) { /* interrupted: sleep the rest */ }
}

static void *grow(void *ptr, size_t *cap, size_t need, size_t item) {
    if (need <= *cap) return ptr;
    size_t cap2 = *cap ? *cap : 1024;
    while (cap2 < need) cap2 *= 2;
    uint8_t *p = realloc(ptr, cap2 * item);
    CHECK(p != NULL, "out of memory");
    memset(p + *cap * item, 0, (cap2 - *cap) * item);
    *cap = cap2;
    return p;
}

/* ---- the harness ---------------------------------------------------------------------------- */

/* Runs `'HARNESS' CMD 'DIR' [ARG]` and returns its stdout's first line (trimmed) in out. */
static void harness(const char *cmd, const char *arg, char *out, size_t out_size) {
    char line[2048];
    snprintf(line, sizeof line, "'%s' %s '%s'%s%s </dev/null", g_harness, cmd, g_dir,
             arg ? " " : "", arg ? arg : "");
    FILE *f = popen(line, "r");
    CHECK(f != NULL, "popen(%s)", line);
    char buf[256] = "";
    if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
    char rest[256];
    while (fgets(rest, sizeof rest, f)) { /* drain */ }
    int status = pclose(f);
    CHECK(status == 0, "the harness failed: %s (status %d)", line, status);
    buf[strcspn(buf, "\r\n")] = '\0';
    if (out) snprintf(out, out_size, "%s", buf);
}

static char fault_log[2048];

static void fault(const char *cmd, int node) {
    char id[16];
    snprintf(id, sizeof id, "%d", node);
    progress("fault: %s node %d", cmd, node);
    size_t len = strlen(fault_log);
    snprintf(fault_log + len, sizeof fault_log - len, "%s%s %d at %.1fs", len ? ", " : "", cmd, node,
             elapsed());
    harness(cmd, id, NULL, 0);
    progress("fault: %s node %d done", cmd, node);
}

static void leaders(int out[PARTITIONS]) {
    char line[2048];
    snprintf(line, sizeof line, "'%s' --leaders '%s' '%s' </dev/null", g_leaders_cmd, g_bootstrap, g_topic);
    for (int p = 0; p < PARTITIONS; p++) out[p] = -1;
    FILE *f = popen(line, "r");
    CHECK(f != NULL, "popen(%s)", line);
    char buf[256];
    while (fgets(buf, sizeof buf, f)) {
        int p, leader;
        if (sscanf(buf, "%d %d", &p, &leader) == 2 && p >= 0 && p < PARTITIONS) out[p] = leader;
    }
    int status = pclose(f);
    CHECK(status == 0, "the leader lookup failed: %s (status %d)", line, status);
    for (int p = 0; p < PARTITIONS; p++) CHECK(out[p] > 0, "no leader for partition %d", p);
    progress("leaders: %d %d %d %d %d %d", out[0], out[1], out[2], out[3], out[4], out[5]);
}

/* ---- the producer --------------------------------------------------------------------------- */

static void on_delivery(odk_producer_t *p, const odk_message_t *m, void *opaque) {
    (void)p;
    (void)opaque;
    int partition;
    int64_t seq;
    bool parsed = parse_value(m, &partition, &seq);
    pthread_mutex_lock(&st.lock);
    if (odk_message_err(m) != ODK_ERR_NO_ERROR) {
        st.delivery_failures++;
        note(st.failure_notes, st.delivery_failures, "partition %d: %s (%s)", odk_message_partition(m),
             odk_err_name(odk_message_err(m)), odk_message_errstr(m));
    } else {
        CHECK(parsed, "a delivery report without a PARTITION:SEQ value");
        CHECK(odk_message_partition(m) == partition, "record %d:%lld reported on partition %d", partition,
              (long long)seq, odk_message_partition(m));
        struct partition_state *ps = &st.parts[partition];
        ps->acks = grow(ps->acks, &ps->cap_acks, ps->n_acks + 1, sizeof *ps->acks);
        ps->acks[ps->n_acks++] = (struct ack){seq, odk_message_offset(m), now_ms()};
    }
    pthread_mutex_unlock(&st.lock);
}

static void *producer_main(void *arg) {
    (void)arg;
    char errstr[512];
    odk_conf_t *conf = test_conf("enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL);
    odk_conf_set_dr_msg_cb(conf, on_delivery);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "producer: %s", errstr);
    int64_t seq = 0;
    while (atomic_load(&writing)) {
        for (int part = 0; part < PARTITIONS; part++) {
            char value[32];
            int n = snprintf(value, sizeof value, "%d:%lld", part, (long long)seq);
            for (;;) {
                odk_err_t e = odk_produce(p, g_topic, part, NULL, 0, value, (size_t)n, NULL, 0, ODK_MSG_F_COPY, NULL);
                if (e == ODK_ERR_NO_ERROR) break;
                if (e == ODK_ERR__QUEUE_FULL) {
                    odk_poll(p, 100);
                    continue;
                }
                pthread_mutex_lock(&st.lock);
                st.produce_errors++;
                st.delivery_failures++;
                note(st.failure_notes, st.delivery_failures, "odk_produce %s: %s", value, odk_err_name(e));
                pthread_mutex_unlock(&st.lock);
                break;
            }
        }
        seq++;
        odk_poll(p, 10);
    }
    progress("producer: %lld rounds sent, flushing", (long long)seq);
    odk_err_t e = odk_flush(p, 180000);
    CHECK(e == ODK_ERR_NO_ERROR, "flush at the end: %s, %d records outstanding", odk_err_name(e),
          odk_producer_outq_len(p));
    odk_producer_destroy(p);
    return NULL;
}

/* ---- the group ------------------------------------------------------------------------------ */

struct member {
    int id;
    pthread_t thread;
    int assigned, revoked, lost;
};

static void on_rebalance(odk_consumer_t *c, odk_err_t event, const odk_topic_partition_t *parts,
                         size_t cnt, void *opaque) {
    (void)c;
    struct member *me = opaque;
    char list[128] = "";
    for (size_t i = 0; i < cnt; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%d", i ? "," : "", parts[i].partition);
    }
    const char *what = event == ODK_ERR__ASSIGN_PARTITIONS   ? "assigned"
                       : event == ODK_ERR__REVOKE_PARTITIONS ? "revoked"
                                                             : "lost";
    if (event == ODK_ERR__ASSIGN_PARTITIONS) me->assigned++;
    else if (event == ODK_ERR__REVOKE_PARTITIONS) me->revoked++;
    else me->lost++;
    progress("member %d: %s [%s]", me->id, what, list);
}

static void commit(odk_consumer_t *c, struct member *me) {
    char errstr[512] = "";
    odk_err_t e = odk_consumer_commit(c, NULL, 0, errstr, sizeof errstr);
    pthread_mutex_lock(&st.lock);
    if (e == ODK_ERR_NO_ERROR) {
        st.commits_ok++;
    } else if (e == ODK_ERR__NO_OFFSET) {
        st.commits_empty++;
    } else {
        st.commit_errors++;
        if (e == ODK_ERR_UNKNOWN_MEMBER_ID) st.unknown_member_commits++;
        note(st.commit_notes, st.commit_errors, "member %d at %.1fs: %s (%s)", me->id, elapsed(), odk_err_name(e),
             errstr);
    }
    pthread_mutex_unlock(&st.lock);
    if (e != ODK_ERR_NO_ERROR && e != ODK_ERR__NO_OFFSET)
        progress("member %d: commit failed: %s (%s)", me->id, odk_err_name(e), errstr);
}

static void *member_main(void *arg) {
    struct member *me = arg;
    char errstr[512];
    odk_conf_t *conf = test_conf("group.id", g_group, "auto.offset.reset", "earliest", "session.timeout.ms", "20000",
                                 "heartbeat.interval.ms", "2000", "enable.auto.commit", "false", NULL);
    odk_conf_set_rebalance_cb(conf, on_rebalance);
    odk_conf_set_opaque(conf, me);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "member %d: %s", me->id, errstr);
    const char *topics[] = {g_topic};
    CHECK_OK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr), errstr);
    int64_t next_commit = now_ms() + 1000;
    while (atomic_load(&consuming)) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (m) {
            odk_err_t e = odk_message_err(m);
            int partition;
            int64_t seq;
            pthread_mutex_lock(&st.lock);
            if (e != ODK_ERR_NO_ERROR) {
                st.consume_errors++;
                note(st.consume_notes, st.consume_errors, "member %d at %.1fs: %s (%s)", me->id, elapsed(),
                     odk_err_name(e), odk_message_errstr(m));
            } else {
                CHECK(parse_value(m, &partition, &seq), "member %d: a record without a PARTITION:SEQ value", me->id);
                struct partition_state *ps = &st.parts[partition];
                ps->consumed = grow(ps->consumed, &ps->cap_consumed, (size_t)seq + 1, 1);
                ps->consumed[seq] = 1;
                st.consumed_records++;
            }
            pthread_mutex_unlock(&st.lock);
            odk_message_destroy(m);
        }
        if (now_ms() >= next_commit) {
            commit(c, me);
            next_commit = now_ms() + 1000;
        }
    }
    commit(c, me);
    CHECK_OK(odk_consumer_close(c), "close");
    odk_consumer_destroy(c);
    progress("member %d: closed (assigned %d, revoked %d, lost %d times)", me->id, me->assigned, me->revoked,
             me->lost);
    return NULL;
}

/* ---- checks --------------------------------------------------------------------------------- */

static void counts(size_t out[PARTITIONS]) {
    pthread_mutex_lock(&st.lock);
    for (int p = 0; p < PARTITIONS; p++) out[p] = st.parts[p].n_acks;
    pthread_mutex_unlock(&st.lock);
}

/* Every partition acknowledges something new within PROGRESS_MS. */
static void await_progress(const char *what) {
    size_t before[PARTITIONS], now[PARTITIONS];
    counts(before);
    int64_t deadline = now_ms() + PROGRESS_MS;
    for (;;) {
        counts(now);
        char stuck[64] = "";
        for (int p = 0; p < PARTITIONS; p++) {
            if (now[p] > before[p]) continue;
            size_t len = strlen(stuck);
            snprintf(stuck + len, sizeof stuck - len, "%s%d", len ? "," : "", p);
        }
        if (!stuck[0]) break;
        CHECK(now_ms() < deadline, "after %s: partitions [%s] acknowledged nothing in %d s (faults: %s)", what, stuck,
              PROGRESS_MS / 1000, fault_log);
        sleep_ms(100);
    }
    progress("every partition acknowledged again after %s (acked: %zu %zu %zu %zu %zu %zu)", what, now[0], now[1],
             now[2], now[3], now[4], now[5]);
}


/* The log through a plain consumer (no group): each partition from its start to its end. */
static void check_log(void) {
    char errstr[512];
    odk_conf_t *conf = test_conf("enable.partition.eof", "true", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "reader: %s", errstr);
    int64_t high[PARTITIONS];
    odk_topic_partition_t tps[PARTITIONS];
    for (int p = 0; p < PARTITIONS; p++) {
        int64_t low = -1;
        CHECK_OK(odk_consumer_query_watermarks(c, g_topic, p, &low, &high[p], 30000), "query_watermarks");
        CHECK(low == 0, "partition %d starts at %lld", p, (long long)low);
        tps[p] = (odk_topic_partition_t){g_topic, p, ODK_OFFSET_BEGINNING, 0};
    }
    CHECK_OK(odk_consumer_assign(c, tps, PARTITIONS, errstr, sizeof errstr), errstr);

    int64_t *log_seq[PARTITIONS]; /* seq at each offset, -1 for none */
    int64_t next[PARTITIONS], last_seq[PARTITIONS];
    for (int p = 0; p < PARTITIONS; p++) {
        log_seq[p] = malloc(sizeof(int64_t) * (size_t)(high[p] > 0 ? high[p] : 1));
        CHECK(log_seq[p] != NULL);
        for (int64_t o = 0; o < high[p]; o++) log_seq[p][o] = -1;
        next[p] = 0;
        last_seq[p] = -1;
    }
    int64_t deadline = now_ms() + 90000;
    for (;;) {
        int done = 0;
        for (int p = 0; p < PARTITIONS; p++) done += next[p] >= high[p];
        if (done == PARTITIONS) break;
        CHECK(now_ms() < deadline, "reading the log: only %d of %d partitions read to their end in 90 s", done,
              PARTITIONS);
        odk_message_t *m = odk_consumer_poll(c, 500);
        if (!m) continue;
        odk_err_t e = odk_message_err(m);
        if (e == ODK_ERR__PARTITION_EOF) {
            odk_message_destroy(m);
            continue;
        }
        CHECK(e == ODK_ERR_NO_ERROR, "reading the log: %s (%s)", odk_err_name(e), odk_message_errstr(m));
        int p = odk_message_partition(m), vp;
        int64_t off = odk_message_offset(m), seq;
        CHECK(p >= 0 && p < PARTITIONS, "reader: partition %d", p);
        CHECK(parse_value(m, &vp, &seq) && vp == p, "partition %d offset %lld: not a PARTITION:SEQ value", p,
              (long long)off);
        CHECK(off >= next[p] && off < high[p], "partition %d: offset %lld out of order (next %lld, end %lld)", p,
              (long long)off, (long long)next[p], (long long)high[p]);
        CHECK(seq > last_seq[p], "partition %d: seq %lld at offset %lld after seq %lld: %s", p, (long long)seq,
              (long long)off, (long long)last_seq[p], seq == last_seq[p] ? "duplicate" : "reordered");
        log_seq[p][off] = seq;
        last_seq[p] = seq;
        next[p] = off + 1;
        odk_message_destroy(m);
    }
    odk_consumer_close(c);
    odk_consumer_destroy(c);

    long total = 0;
    for (int p = 0; p < PARTITIONS; p++) {
        struct partition_state *ps = &st.parts[p];
        for (size_t i = 0; i < ps->n_acks; i++) {
            struct ack *a = &ps->acks[i];
            CHECK(a->offset >= 0 && a->offset < high[p], "partition %d: seq %lld acknowledged at offset %lld, past the log end %lld",
                  p, (long long)a->seq, (long long)a->offset, (long long)high[p]);
            CHECK(log_seq[p][a->offset] == a->seq, "partition %d: seq %lld acknowledged at offset %lld, the log has %lld there (lost)",
                  p, (long long)a->seq, (long long)a->offset, (long long)log_seq[p][a->offset]);
        }
        long records = 0;
        for (int64_t o = 0; o < high[p]; o++) records += log_seq[p][o] >= 0;
        progress("log: partition %d: %ld records up to offset %lld, %zu acknowledged, each once, in order", p, records,
                 (long long)high[p], ps->n_acks);
        total += records;
        free(log_seq[p]);
    }
    progress("log: %ld records read", total);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s BOOTSTRAP HARNESS CLUSTER_DIR LEADERS_CMD (run c/test_cluster_faults.sh)\n", argv[0]);
        return 2;
    }
    g_bootstrap = argv[1];
    g_harness = argv[2];
    g_dir = argv[3];
    g_leaders_cmd = argv[4];
    for (int i = 1; i < argc; i++) CHECK(!strchr(argv[i], '\''), "no quotes in arguments: %s", argv[i]);
    setenv("ODK_TEST_BOOTSTRAP", g_bootstrap, 1);
    setvbuf(stdout, NULL, _IOLBF, 0);
    started_ms = now_ms();
    unique_name(g_topic, sizeof g_topic, "c-faults");
    unique_name(g_group, sizeof g_group, "c-faults-group");

    /* The topic: 6 partitions, RF 3, min.insync.replicas=2. */
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_admin_t *admin = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(admin != NULL, "admin: %s", errstr);
    const char *configs[] = {"min.insync.replicas", "2"};
    odk_new_topic_t nt = {g_topic, PARTITIONS, 3, configs, 1};
    int32_t result = -77;
    CHECK_OK(odk_admin_create_topics(admin, &nt, 1, &result, 60000, errstr, sizeof errstr), errstr);
    CHECK(result == ODK_ERR_NO_ERROR, "create_topics result %s", odk_err_name(result));
    odk_admin_destroy(admin);
    progress("topic %s: %d partitions, RF 3, min.insync.replicas=2", g_topic, PARTITIONS);

    pthread_t producer;
    struct member members[2] = {{.id = 1}, {.id = 2}};
    CHECK(pthread_create(&producer, NULL, producer_main, NULL) == 0);
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&members[i].thread, NULL, member_main, &members[i]) == 0);

    await_progress("the start");

    int led[PARTITIONS];
    leaders(led);
    int victim = led[0];
    fault("kill", victim);
    await_progress("killing the leader of partition 0");
    fault("restart", victim);

    leaders(led);
    int frozen = led[1];
    fault("pause", frozen);
    sleep_ms(9000);
    await_progress("pausing a node");
    fault("resume", frozen);

    char controller_id[64];
    harness("controller", NULL, controller_id, sizeof controller_id);
    int controller = atoi(controller_id);
    CHECK(controller > 0, "controller id '%s'", controller_id);
    progress("active controller: node %d", controller);
    fault("kill", controller);
    await_progress("killing the controller");
    fault("restart", controller);

    leaders(led);
    int cut = led[2];
    fault("cut", cut);
    int64_t cut_at = now_ms();
    sleep_ms(10000);
    int64_t healed_at = now_ms();
    fault("heal", cut);
    pthread_mutex_lock(&st.lock);
    for (int p = 0; p < PARTITIONS; p++) {
        if (led[p] == cut) continue;
        long during = 0;
        struct partition_state *ps = &st.parts[p];
        for (size_t i = 0; i < ps->n_acks; i++)
            during += ps->acks[i].at_ms >= cut_at + 5000 && ps->acks[i].at_ms < healed_at;
        CHECK(during > 0, "partition %d (leader %d) acknowledged nothing while node %d was cut off", p, led[p], cut);
        progress("partition %d (leader %d): %ld acknowledged in the last 5 s of the cut", p, led[p], during);
    }
    pthread_mutex_unlock(&st.lock);
    await_progress("healing the cut");

    atomic_store(&writing, false);
    CHECK(pthread_join(producer, NULL) == 0);
    pthread_mutex_lock(&st.lock);
    long failures = st.delivery_failures;
    for (long i = 0; i < failures && i < MAX_NOTES; i++) fprintf(stderr, "  delivery failure: %s\n", st.failure_notes[i]);
    long acked = 0;
    for (int p = 0; p < PARTITIONS; p++) acked += (long)st.parts[p].n_acks;
    pthread_mutex_unlock(&st.lock);
    CHECK(failures == 0, "%ld deliveries failed (%ld at odk_produce), e.g. %s", failures, st.produce_errors,
          st.failure_notes[0]);
    progress("producer: %ld records acknowledged, no delivery failed", acked);

    /* The group consumed every acknowledged record. */
    int64_t deadline = now_ms() + 90000;
    long missing = 0;
    for (;;) {
        missing = 0;
        int64_t example_p = -1, example_seq = -1;
        pthread_mutex_lock(&st.lock);
        for (int p = 0; p < PARTITIONS; p++) {
            struct partition_state *ps = &st.parts[p];
            for (size_t i = 0; i < ps->n_acks; i++) {
                int64_t s = ps->acks[i].seq;
                if ((size_t)s >= ps->cap_consumed || !ps->consumed[s]) {
                    if (!missing++) example_p = p, example_seq = s;
                }
            }
        }
        pthread_mutex_unlock(&st.lock);
        if (!missing) break;
        CHECK(now_ms() < deadline, "%ld of %ld acknowledged records never consumed by the group, e.g. %lld:%lld", missing,
              acked, (long long)example_p, (long long)example_seq);
        sleep_ms(200);
    }
    progress("group: consumed every acknowledged record (%ld records returned, %ld consume errors)", st.consumed_records,
             st.consume_errors);
    atomic_store(&consuming, false);
    for (int i = 0; i < 2; i++) CHECK(pthread_join(members[i].thread, NULL) == 0);

    for (long i = 0; i < st.commit_errors && i < MAX_NOTES; i++) fprintf(stderr, "  commit error: %s\n", st.commit_notes[i]);
    for (long i = 0; i < st.consume_errors && i < MAX_NOTES; i++) fprintf(stderr, "  consume error: %s\n", st.consume_notes[i]);
    CHECK(st.unknown_member_commits == 0, "%ld commits failed with UNKNOWN_MEMBER_ID (faults: %s)",
          st.unknown_member_commits, fault_log);

    check_log();

    printf("summary: %ld records acknowledged over %d partitions (", acked, PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++) printf("%s%zu", p ? " " : "", st.parts[p].n_acks);
    printf("), 0 delivery failures, all consumed by the group, each once at its offset in the log; "
           "commits: %ld ok, %ld with nothing new, %ld failed (%ld UNKNOWN_MEMBER_ID); consume errors: %ld; "
           "rebalances: member 1 %d/%d/%d, member 2 %d/%d/%d (assigned/revoked/lost); faults: %s; %.0f s\n",
           st.commits_ok, st.commits_empty, st.commit_errors, st.unknown_member_commits, st.consume_errors,
           members[0].assigned, members[0].revoked, members[0].lost, members[1].assigned, members[1].revoked,
           members[1].lost, fault_log, elapsed());
    for (int p = 0; p < PARTITIONS; p++) {
        free(st.parts[p].acks);
        free(st.parts[p].consumed);
    }
    printf("ok - cluster_faults\n");
    return 0;
}
