/*
 * The admin calls: create (and duplicate), list, add partitions, delete topics; describe and
 * incrementally alter configs; delete records; list, describe and delete groups; list, alter
 * and delete a group's committed offsets.
 */
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

static odk_admin_t *new_admin(void) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_admin_t *admin = odk_admin_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(admin != NULL, "%s", errstr);
    return admin;
}

/* The entry named `name` of a described resource, or NULL. */
static const odk_config_entry_t *config_entry(const odk_resource_config_t *r, const char *name) {
    for (size_t i = 0; i < r->entry_cnt; i++) {
        if (strcmp(r->entries[i].name, name) == 0) return &r->entries[i];
    }
    return NULL;
}

/* retention.ms of `topic` as described now: its value (or "") and source. */
static void retention(odk_admin_t *admin, const char *topic, char *value, size_t size, int32_t *source) {
    char errstr[512];
    odk_config_resource_t res = {ODK_RESOURCE_TOPIC, topic};
    odk_resource_config_t *out = NULL;
    CHECK_OK(odk_admin_describe_configs(admin, &res, 1, &out, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(out != NULL && out[0].err == 0);
    const odk_config_entry_t *e = config_entry(&out[0], "retention.ms");
    CHECK(e != NULL && !e->sensitive);
    snprintf(value, size, "%s", e->value ? e->value : "");
    *source = e->source;
    odk_resource_configs_destroy(out, 1);
}

static void configs_describe_and_alter(void) {
    char topic[128], errstr[512], value[64];
    int32_t source;
    unique_name(topic, sizeof topic, "c-admin-cfg");
    odk_admin_t *admin = new_admin();
    const char *configs[] = {"retention.ms", "3600000"};
    odk_new_topic_t nt = {topic, 1, -1, configs, 1};
    CHECK_OK(odk_admin_create_topics(admin, &nt, 1, NULL, DEADLINE_MS, errstr, sizeof errstr), errstr);

    /* The topic's override (source 1, DYNAMIC_TOPIC_CONFIG) and a default (5, DEFAULT_CONFIG);
     * a topic that does not exist fails alone. */
    odk_config_resource_t res[] = {{ODK_RESOURCE_TOPIC, topic}, {ODK_RESOURCE_TOPIC, "c-admin-cfg-none"}};
    odk_resource_config_t *out = NULL;
    odk_err_t err = odk_admin_describe_configs(admin, res, 2, &out, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_UNKNOWN_TOPIC_OR_PART, "%s: %s", odk_err_name(err), errstr);
    CHECK(strstr(errstr, "c-admin-cfg-none") != NULL, "%s", errstr);
    CHECK(out != NULL && out[0].err == 0 && out[1].err == ODK_ERR_UNKNOWN_TOPIC_OR_PART && out[1].entry_cnt == 0);
    const odk_config_entry_t *e = config_entry(&out[0], "retention.ms");
    CHECK(e && e->value && strcmp(e->value, "3600000") == 0 && e->source == 1 && !e->read_only, "retention.ms");
    e = config_entry(&out[0], "cleanup.policy");
    CHECK(e && e->value && strcmp(e->value, "delete") == 0 && e->source != 1, "cleanup.policy");
    odk_resource_configs_destroy(out, 2);

    /* SET, checked with validate_only first (nothing changes), then for real. */
    odk_config_op_t set = {"retention.ms", ODK_CONFIG_OP_SET, "7200000"};
    odk_config_alteration_t alt = {{ODK_RESOURCE_TOPIC, topic}, &set, 1};
    int32_t result = -77;
    CHECK_OK(odk_admin_incremental_alter_configs(admin, &alt, 1, true, &result, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(result == 0);
    retention(admin, topic, value, sizeof value, &source);
    CHECK(strcmp(value, "3600000") == 0, "validate_only changed retention.ms to %s", value);
    CHECK_OK(odk_admin_incremental_alter_configs(admin, &alt, 1, false, &result, DEADLINE_MS, errstr, sizeof errstr), errstr);
    retention(admin, topic, value, sizeof value, &source);
    CHECK(strcmp(value, "7200000") == 0 && source == 1, "retention.ms %s from %d", value, source);

    /* DELETE: back to the broker's default. */
    odk_config_op_t del = {"retention.ms", ODK_CONFIG_OP_DELETE, NULL};
    alt.ops = &del;
    CHECK_OK(odk_admin_incremental_alter_configs(admin, &alt, 1, false, &result, DEADLINE_MS, errstr, sizeof errstr), errstr);
    retention(admin, topic, value, sizeof value, &source);
    CHECK(source != 1 && strcmp(value, "7200000") != 0, "retention.ms %s from %d", value, source);

    /* Per-alteration results: a missing topic fails, the other alteration is applied. */
    odk_config_alteration_t two[] = {{{ODK_RESOURCE_TOPIC, "c-admin-cfg-none"}, &set, 1}, {{ODK_RESOURCE_TOPIC, topic}, &set, 1}};
    int32_t results[2] = {-77, -77};
    err = odk_admin_incremental_alter_configs(admin, two, 2, false, results, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_UNKNOWN_TOPIC_OR_PART && results[0] == ODK_ERR_UNKNOWN_TOPIC_OR_PART && results[1] == 0,
          "%s: %d %d", odk_err_name(err), results[0], results[1]);
    retention(admin, topic, value, sizeof value, &source);
    CHECK(strcmp(value, "7200000") == 0);

    /* Bad arguments never reach the broker. */
    odk_config_resource_t bad_type = {7, topic}, bad_broker = {ODK_RESOURCE_BROKER, "first"};
    CHECK(odk_admin_describe_configs(admin, &bad_type, 1, &out, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_describe_configs(admin, &bad_broker, 1, &out, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_describe_configs(admin, res, 1, NULL, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_config_op_t bad_op = {"retention.ms", 9, "1"}, no_value = {"retention.ms", ODK_CONFIG_OP_SET, NULL};
    alt.ops = &bad_op;
    CHECK(odk_admin_incremental_alter_configs(admin, &alt, 1, false, NULL, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    alt.ops = &no_value;
    CHECK(odk_admin_incremental_alter_configs(admin, &alt, 1, false, NULL, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_incremental_alter_configs(NULL, &alt, 1, false, NULL, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);

    const char *names[] = {topic};
    CHECK_OK(odk_admin_delete_topics(admin, names, 1, NULL, DEADLINE_MS, errstr, sizeof errstr), errstr);
    odk_admin_destroy(admin);
}

/* Produces `n` records to partition 0 of `topic`. */
static void produce_n(const char *topic, int n) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_producer_t *p = odk_producer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(p != NULL, "%s", errstr);
    for (int i = 0; i < n; i++) {
        CHECK_OK(odk_produce(p, topic, 0, NULL, 0, "v", 1, NULL, 0, 0, NULL), "produce");
    }
    CHECK_OK(odk_flush(p, DEADLINE_MS), "flush");
    odk_producer_destroy(p);
}

static void low_watermark_is(const char *topic, int64_t want) {
    char errstr[512];
    odk_conf_t *conf = test_conf(NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    int64_t low = -77, high = -77;
    CHECK_OK(odk_consumer_query_watermarks(c, topic, 0, &low, &high, DEADLINE_MS), "watermarks");
    CHECK(low == want && high == 10, "watermarks %lld..%lld", (long long)low, (long long)high);
    odk_consumer_destroy(c);
}

static void records_deleted_before_an_offset(void) {
    char topic[128], errstr[512];
    unique_name(topic, sizeof topic, "c-admin-records");
    create_topic(topic, 2);
    produce_n(topic, 10);
    odk_admin_t *admin = new_admin();

    odk_topic_partition_t before = {topic, 0, 4, -77};
    CHECK_OK(odk_admin_delete_records(admin, &before, 1, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(before.offset == 4 && before.err == 0, "low watermark %lld", (long long)before.offset);
    low_watermark_is(topic, 4);

    /* Beyond the high watermark fails for that partition only; ODK_OFFSET_END is the end. */
    odk_topic_partition_t two[] = {{topic, 1, 100, -77}, {topic, 0, ODK_OFFSET_END, -77}};
    odk_err_t err = odk_admin_delete_records(admin, two, 2, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_OFFSET_OUT_OF_RANGE, "%s: %s", odk_err_name(err), errstr);
    CHECK(two[0].err == ODK_ERR_OFFSET_OUT_OF_RANGE && two[0].offset == 100);
    CHECK(two[1].err == 0 && two[1].offset == 10, "%d %lld", two[1].err, (long long)two[1].offset);
    low_watermark_is(topic, 10);

    odk_topic_partition_t negative = {topic, 0, -5, -77};
    CHECK(odk_admin_delete_records(admin, &negative, 1, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_delete_records(admin, NULL, 1, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_admin_destroy(admin);
}

/* The listing of `group` in `*groups`, or NULL. */
static const odk_group_listing_t *listed_group(odk_admin_t *admin, const char *group,
                                              odk_group_listing_t **groups, size_t *cnt) {
    char errstr[512];
    CHECK_OK(odk_admin_list_groups(admin, groups, cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    for (size_t i = 0; i < *cnt; i++) {
        if (strcmp((*groups)[i].group_id, group) == 0) return &(*groups)[i];
    }
    return NULL;
}

/* Committed offset of partition `p` in a list (-77 when absent). */
static int64_t committed_at(const odk_topic_partition_t *parts, size_t cnt, int32_t p) {
    for (size_t i = 0; i < cnt; i++) {
        if (parts[i].partition == p) return parts[i].offset;
    }
    return -77;
}

static void groups_listed_described_and_deleted(void) {
    char topic[128], group[128], errstr[512];
    unique_name(topic, sizeof topic, "c-admin-groups");
    unique_name(group, sizeof group, "c-admin-group");
    create_topic(topic, 2);
    produce_n(topic, 10);
    odk_admin_t *admin = new_admin();

    /* A member that consumed the 10 records of partition 0 and committed them. */
    odk_conf_t *conf = test_conf("group.id", group, "client.id", "c-admin-member", "auto.offset.reset", "earliest",
                                 "enable.auto.commit", "false", NULL);
    odk_consumer_t *c = odk_consumer_new(conf, errstr, sizeof errstr);
    odk_conf_destroy(conf);
    CHECK(c != NULL, "%s", errstr);
    const char *topics[] = {topic};
    CHECK_OK(odk_consumer_subscribe(c, topics, 1, errstr, sizeof errstr), errstr);
    int got = 0;
    for (int64_t deadline = now_ms() + DEADLINE_MS; got < 10 && now_ms() < deadline;) {
        odk_message_t *m = odk_consumer_poll(c, 200);
        if (!m) continue;
        CHECK(odk_message_err(m) == ODK_ERR_NO_ERROR, "%s", odk_message_errstr(m));
        got++;
        odk_message_destroy(m);
    }
    CHECK(got == 10);
    CHECK_OK(odk_consumer_commit(c, NULL, 0, errstr, sizeof errstr), errstr);

    odk_group_listing_t *groups = NULL;
    size_t group_cnt = 0;
    const odk_group_listing_t *g = listed_group(admin, group, &groups, &group_cnt);
    CHECK(g != NULL && strcmp(g->protocol_type, "consumer") == 0 && strcmp(g->state, "Stable") == 0,
          "listed: %s %s", g ? g->protocol_type : "-", g ? g->state : "-");
    odk_group_listings_destroy(groups, group_cnt);

    const char *described[] = {group, "c-admin-group-none"};
    odk_group_description_t *d = NULL;
    CHECK_OK(odk_admin_describe_groups(admin, described, 2, &d, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(d[0].err == 0 && strcmp(d[0].group_id, group) == 0 && strcmp(d[0].state, "Stable") == 0, "%s", d[0].state);
    CHECK(strcmp(d[0].protocol_type, "consumer") == 0 && d[0].protocol[0] != '\0' && d[0].member_cnt == 1);
    CHECK(strcmp(d[0].members[0].client_id, "c-admin-member") == 0 && d[0].members[0].member_id[0] != '\0');
    CHECK(d[0].members[0].group_instance_id == NULL && d[0].members[0].assignment_cnt == 2);
    CHECK(strcmp(d[0].members[0].assignment[0].topic, topic) == 0);
    CHECK(d[1].err == 0 && strcmp(d[1].state, "Dead") == 0 && d[1].member_cnt == 0, "%s", d[1].state);
    odk_group_descriptions_destroy(d, 2);

    /* A group with a member cannot be deleted. */
    int32_t result = -77;
    odk_err_t err = odk_admin_delete_groups(admin, described, 1, &result, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_NON_EMPTY_GROUP && result == ODK_ERR_NON_EMPTY_GROUP, "%s", odk_err_name(err));

    /* Committed offsets: all of them, or the partitions asked for. */
    odk_topic_partition_t *offsets = NULL;
    size_t offset_cnt = 0;
    CHECK_OK(odk_admin_list_group_offsets(admin, group, NULL, 0, &offsets, &offset_cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(offset_cnt >= 1 && committed_at(offsets, offset_cnt, 0) == 10, "%zu partitions, p0 at %lld", offset_cnt,
          (long long)committed_at(offsets, offset_cnt, 0));
    CHECK(strcmp(offsets[0].topic, topic) == 0 && offsets[0].err == 0);
    odk_topic_partitions_destroy(offsets, offset_cnt);
    CHECK_OK(odk_consumer_close(c), "close");
    odk_consumer_destroy(c);

    /* With no member left: alter, then delete, a committed offset. */
    odk_topic_partition_t alter = {topic, 0, 3, -77};
    CHECK_OK(odk_admin_alter_group_offsets(admin, group, &alter, 1, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(alter.err == 0 && alter.offset == 3);
    odk_topic_partition_t ask[] = {{topic, 0, -77, -77}, {topic, 1, -77, -77}};
    CHECK_OK(odk_admin_list_group_offsets(admin, group, ask, 2, &offsets, &offset_cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(offset_cnt == 2 && committed_at(offsets, offset_cnt, 0) == 3, "p0 at %lld", (long long)committed_at(offsets, offset_cnt, 0));
    CHECK(committed_at(offsets, offset_cnt, 1) == ODK_OFFSET_INVALID);
    odk_topic_partitions_destroy(offsets, offset_cnt);
    odk_topic_partition_t del = {topic, 0, -77, -77};
    CHECK_OK(odk_admin_delete_group_offsets(admin, group, &del, 1, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(del.err == 0);
    CHECK_OK(odk_admin_list_group_offsets(admin, group, ask, 1, &offsets, &offset_cnt, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(offset_cnt == 1 && offsets[0].offset == ODK_OFFSET_INVALID, "p0 at %lld", (long long)offsets[0].offset);
    odk_topic_partitions_destroy(offsets, offset_cnt);

    /* Deleted: gone from the listing; deleting again is GROUP_ID_NOT_FOUND. */
    CHECK_OK(odk_admin_delete_groups(admin, described, 1, &result, DEADLINE_MS, errstr, sizeof errstr), errstr);
    CHECK(result == 0);
    CHECK(listed_group(admin, group, &groups, &group_cnt) == NULL);
    odk_group_listings_destroy(groups, group_cnt);
    err = odk_admin_delete_groups(admin, described, 1, &result, DEADLINE_MS, errstr, sizeof errstr);
    CHECK(err == ODK_ERR_GROUP_ID_NOT_FOUND && result == ODK_ERR_GROUP_ID_NOT_FOUND, "%s", odk_err_name(err));

    CHECK(odk_admin_list_groups(admin, NULL, &group_cnt, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_describe_groups(admin, NULL, 1, &d, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    CHECK(odk_admin_list_group_offsets(admin, NULL, NULL, 0, &offsets, &offset_cnt, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_topic_partition_t negative = {topic, 0, -3, -77};
    CHECK(odk_admin_alter_group_offsets(admin, group, &negative, 1, 1000, errstr, sizeof errstr) == ODK_ERR__INVALID_ARG);
    odk_admin_destroy(admin);
}

int main(void) {
    RUN(topic_lifecycle);
    RUN(configs_describe_and_alter);
    RUN(records_deleted_before_an_offset);
    RUN(groups_listed_described_and_deleted);
    return 0;
}
