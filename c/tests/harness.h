/*
 * A minimal test harness for libodradek's C tests: CHECK macros that report the failing
 * expression and exit non-zero, deadlines for polling loops, and the broker address.
 *
 * Tests that need a broker read ODK_TEST_BOOTSTRAP (set by c/test.sh, which starts one).
 */
#ifndef ODK_TEST_HARNESS_H
#define ODK_TEST_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <odradek.h>

static inline void fail_at(const char *file, int line, const char *expr, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: CHECK(%s) failed", file, line, expr);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    exit(1);
}

/* CHECK(cond) or CHECK(cond, "format", args...) */
#define CHECK(cond, ...) \
    do { if (!(cond)) fail_at(__FILE__, __LINE__, #cond, "" __VA_ARGS__); } while (0)

/* An odk_err_t call that must succeed; prints the error's name and the error buffer. */
#define CHECK_OK(call, errstr) \
    do { odk_err_t e_ = (call); \
         if (e_ != ODK_ERR_NO_ERROR) fail_at(__FILE__, __LINE__, #call, "%s: %s", odk_err_name(e_), (errstr)); \
    } while (0)

static inline int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Generous: the same programs run under valgrind, which is tens of times slower. */
#define DEADLINE_MS 120000

static inline const char *bootstrap(void) {
    const char *b = getenv("ODK_TEST_BOOTSTRAP");
    if (!b || !*b) {
        fprintf(stderr, "ODK_TEST_BOOTSTRAP is not set (run c/test.sh, which starts a broker)\n");
        exit(2);
    }
    return b;
}

/* A topic name no other test run uses. */
static inline void unique_name(char *buf, size_t size, const char *prefix) {
    static int counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, size, "%s-%ld-%ld-%d", prefix, (long)getpid(), (long)ts.tv_nsec, ++counter);
}

/* A configuration with bootstrap.servers and the given extra name/value pairs (NULL-ended). */
static inline odk_conf_t *test_conf(const char *first, ...) {
    char errstr[512];
    odk_conf_t *conf = odk_conf_new();
    CHECK(conf != NULL);
    CHECK_OK(odk_conf_set(conf, "bootstrap.servers", bootstrap(), errstr, sizeof errstr), errstr);
    va_list ap;
    va_start(ap, first);
    for (const char *k = first; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        CHECK_OK(odk_conf_set(conf, k, v, errstr, sizeof errstr), errstr);
    }
    va_end(ap);
    return conf;
}

/* Creates a topic with `partitions` partitions through the admin API. */
static inline void create_topic(const char *name, int partitions) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_admin_t *admin = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(admin != NULL, "%s", errstr);
    odk_new_topic_t topic = {name, partitions, -1, NULL, 0};
    CHECK_OK(odk_admin_create_topics(admin, &topic, 1, NULL, DEADLINE_MS, errstr, sizeof errstr), errstr);
    odk_admin_destroy(admin);
}

#define RUN(test) do { test(); printf("ok - %s\n", #test); fflush(stdout); } while (0)

#endif
