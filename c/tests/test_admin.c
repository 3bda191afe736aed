/* The admin basics: create (and duplicate), list, add partitions, delete. */
#include "harness.h"

static int find(const odk_topic_info_t *topics, size_t cnt, const char *name) {
    for (size_t i = 0; i < cnt; i++) {
        if (strcmp(topics[i].name, name) == 0) return topics[i].partition_cnt;
    }
    return -1;
}

static void topic_lifecycle(void) {
    char a[128], b[128], errstr[512];
    unique_name(a, sizeof a, "c-admin-a");
    unique_name(b, sizeof b, "c-admin-b");
    odk_conf_t *conf = test_conf(NULL);
    odk_admin_t *admin = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(admin != NULL, "%s", errstr);

    const char *configs[] = {"retention.ms", "3600000"};
    odk_new_topic_t topics[2] = {{a, 2, -1, configs, 1}, {b, 1, 1, NULL, 0}};
    int32_t results[2] = {-77, -77};
    CHECK_OK(odk_admin_create_topics(admin, topics, 2, results, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(results[0] == 0 && results[1] == 0);

    /* Creating `a` again fails for `a` only, and says so. */
    topics[1].name = "c-admin-never-created";
    topics[1].num_partitions = 0; /* broker default */
    results[0] = results[1] = -77;
    odk_err_t err = odk_admin_create_topics(admin, topics, 2, results, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_TOPIC_ALREADY_EXISTS, "%s", odk_err_name(err));
    CHECK(strstr(errstr, a) != NULL, "%s", errstr);
    CHECK(results[0] == ODK_ERR_TOPIC_ALREADY_EXISTS && results[1] == 0);

    odk_topic_info_t *listed = NULL;
    size_t listed_cnt = 0;
    CHECK_OK(odk_admin_list_topics(admin, &listed, &listed_cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(find(listed, listed_cnt, a) == 2 && find(listed, listed_cnt, b) == 1);
    odk_topic_infos_destroy(listed, listed_cnt);

    CHECK_OK(odk_admin_create_partitions(admin, a, 4, DEADLINE_MS, errstr, sizeof errstr), errstr);
    err = odk_admin_create_partitions(admin, a, 3, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_INVALID_PARTITIONS, "%s: %s", odk_err_name(err), errstr);
    CHECK_OK(odk_admin_list_topics(admin, &listed, &listed_cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(find(listed, listed_cnt, a) == 4);
    odk_topic_infos_destroy(listed, listed_cnt);

    const char *names[] = {a, b, "c-admin-never-created"};
    int32_t deleted[3];
    CHECK_OK(odk_admin_delete_topics(admin, names, 3, deleted, DEADLINE_MS, errstr, sizeof errstr), errstr);
    err = odk_admin_delete_topics(admin, names, 1, deleted, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_UNKNOWN_TOPIC_OR_PART && deleted[0] == ODK_ERR_UNKNOWN_TOPIC_OR_PART, "%s", odk_err_name(err));
    CHECK(odk_admin_create_topics(admin, NULL, 1, NULL, 0, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_admin_destroy(admin);
}

int main(void) {
    RUN(topic_lifecycle);
    return 0;
}
