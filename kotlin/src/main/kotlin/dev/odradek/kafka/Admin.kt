package dev.odradek.kafka

import dev.odradek.kafka.ffi.NativeAdmin
import dev.odradek.kafka.ffi.OffsetCommit
import dev.odradek.kafka.ffi.OffsetQuery
import dev.odradek.kafka.ffi.NewTopic as FfiNewTopic
import java.util.Properties

/** A topic to create: `null` counts and factors use the broker's defaults. */
data class NewTopic(
    val name: String,
    val numPartitions: Int? = null,
    val replicationFactor: Short? = null,
    val configs: Map<String, String> = emptyMap(),
)

/** A topic as [Admin.listTopics] reports it. */
data class TopicListing(val name: String, val isInternal: Boolean, val partitions: Int)

/** One partition of a described topic. */
data class TopicPartitionInfo(val partition: Int, val leader: Int?, val replicas: List<Int>, val isr: List<Int>)

/** A described topic. */
data class TopicDescription(val name: String, val isInternal: Boolean, val partitions: List<TopicPartitionInfo>)

/** A broker. */
data class Node(val id: Int, val host: String, val port: Int, val rack: String?)

/** The cluster as [Admin.describeCluster] reports it. */
data class ClusterDescription(val clusterId: String, val controller: Int?, val nodes: List<Node>)

/** A group as [Admin.listConsumerGroups] reports it. */
data class ConsumerGroupListing(val groupId: String, val protocolType: String, val state: String)

/** A member of a described group. */
data class MemberDescription(
    val memberId: String,
    val groupInstanceId: String?,
    val clientId: String,
    val host: String,
    val assignment: Set<TopicPartition>,
)

/** A described group. */
data class ConsumerGroupDescription(
    val groupId: String,
    val state: String,
    val partitionAssignor: String,
    val members: List<MemberDescription>,
)

/** Which offset [Admin.listOffsets] looks up. */
sealed class OffsetSpec {
    /** The log start offset. */
    data object Earliest : OffsetSpec()
    /** The high watermark (the last stable offset with `readCommitted`). */
    data object Latest : OffsetSpec()
    /** The record with the largest timestamp. */
    data object MaxTimestamp : OffsetSpec()
    /** The first record at or after [ms]. */
    data class ForTimestamp(val ms: Long) : OffsetSpec()

    internal fun toFfi(): dev.odradek.kafka.ffi.OffsetSpec = when (this) {
        Earliest -> dev.odradek.kafka.ffi.OffsetSpec.Earliest
        Latest -> dev.odradek.kafka.ffi.OffsetSpec.Latest
        MaxTimestamp -> dev.odradek.kafka.ffi.OffsetSpec.MaxTimestamp
        is ForTimestamp -> dev.odradek.kafka.ffi.OffsetSpec.Timestamp(ms)
    }
}

/** An offset found by [Admin.listOffsets] (`offset` null: no record matches). */
data class ListedOffset(val offset: Long?, val timestamp: Long?)

/**
 * The admin client (the Java client's `Admin`), with `suspend` calls: topics, groups, offsets
 * and client quotas. Calls on several items
 * return one [Result] per item, so one bad topic does not hide the others' outcomes; use
 * [all] to get the values or the first failure. A call throws [KafkaException] only when it
 * got nowhere. [errorListener] hears client-level errors (brokers down:
 * [ClientErrorListener]). Thread-safe.
 */
class Admin @JvmOverloads constructor(
    config: Map<String, Any?>,
    errorListener: ClientErrorListener? = null,
) : AutoCloseable {
    /** From `Properties`. */
    @JvmOverloads
    constructor(config: Properties, errorListener: ClientErrorListener? = null) :
        this(config.entries.associate { (k, v) -> k.toString() to v }, errorListener)

    private val native: NativeAdmin = mapped { NativeAdmin(stringify(config), errorListener?.let(::ClientErrorAdapter)) }

    /** Creates topics (with [validateOnly], only checks them). */
    suspend fun createTopics(topics: Collection<NewTopic>, validateOnly: Boolean = false): Map<String, Result<Unit>> {
        val list = topics.map { FfiNewTopic(it.name, it.numPartitions, it.replicationFactor, it.configs) }
        return mapped { native.createTopics(list, validateOnly) }.associate { it.name to it.error.toResult() }
    }

    /** Deletes topics. */
    suspend fun deleteTopics(names: Collection<String>): Map<String, Result<Unit>> =
        mapped { native.deleteTopics(names.toList()) }.associate { it.name to it.error.toResult() }

    /** Raises topics' partition counts to the given totals. */
    suspend fun createPartitions(totals: Map<String, Int>): Map<String, Result<Unit>> =
        mapped { native.createPartitions(totals) }.associate { it.name to it.error.toResult() }

    /** Topics by name; internal ones only with [includeInternal]. */
    suspend fun listTopics(includeInternal: Boolean = false): Map<String, TopicListing> =
        mapped { native.listTopics() }
            .filter { includeInternal || !it.internal }
            .associate { it.name to TopicListing(it.name, it.internal, it.partitions.toInt()) }

    /** Partitions, leaders and replicas of each topic. */
    suspend fun describeTopics(names: Collection<String>): Map<String, Result<TopicDescription>> =
        mapped { native.describeTopics(names.toList()) }.associate { d ->
            val error = d.error
            d.name to if (error != null) {
                Result.failure(error.toException())
            } else {
                Result.success(
                    TopicDescription(
                        d.name,
                        d.internal,
                        d.partitions.map { TopicPartitionInfo(it.partition, it.leader, it.replicas, it.isr) },
                    ),
                )
            }
        }

    /** Cluster id, controller and brokers. */
    suspend fun describeCluster(): ClusterDescription {
        val c = mapped { native.describeCluster() }
        return ClusterDescription(c.clusterId, c.controller, c.nodes.map { Node(it.id, it.host, it.port, it.rack) })
    }

    /** Every group of the cluster. */
    suspend fun listConsumerGroups(): List<ConsumerGroupListing> =
        mapped { native.listGroups() }.map { ConsumerGroupListing(it.groupId, it.protocolType, it.state) }

    /** State, assignor and members of each group. */
    suspend fun describeConsumerGroups(groupIds: Collection<String>): Map<String, Result<ConsumerGroupDescription>> =
        mapped { native.describeGroups(groupIds.toList()) }.associate { g ->
            val error = g.error
            g.groupId to if (error != null) {
                Result.failure(error.toException())
            } else {
                Result.success(
                    ConsumerGroupDescription(
                        g.groupId,
                        g.state,
                        g.protocol,
                        g.members.map { m ->
                            MemberDescription(
                                m.memberId,
                                m.groupInstanceId,
                                m.clientId,
                                m.host,
                                m.assignment.mapTo(LinkedHashSet()) { it.toApi() },
                            )
                        },
                    ),
                )
            }
        }

    /** Deletes groups without members. */
    suspend fun deleteConsumerGroups(groupIds: Collection<String>): Map<String, Result<Unit>> =
        mapped { native.deleteGroups(groupIds.toList()) }.associate { it.groupId to it.error.toResult() }

    /**
     * A group's committed offsets: of [partitions], or of every partition it committed. A
     * partition without a committed offset is left out; a partition's error throws.
     */
    suspend fun listConsumerGroupOffsets(
        groupId: String,
        partitions: Collection<TopicPartition>? = null,
    ): Map<TopicPartition, OffsetAndMetadata> =
        mapped { native.listGroupOffsets(groupId, partitions?.map { it.toFfi() }) }
            .onEach { o -> o.error?.let { throw it.toException() } }
            .filter { it.offset != null }
            .associate { o -> o.partition.toApi() to OffsetAndMetadata(o.offset!!, o.metadata.ifEmpty { null }) }

    /** Sets a group's committed offsets (the group must have no active members). */
    suspend fun alterConsumerGroupOffsets(
        groupId: String,
        offsets: Map<TopicPartition, OffsetAndMetadata>,
    ): Map<TopicPartition, Result<Unit>> {
        val list = offsets.map { (tp, o) -> OffsetCommit(tp.toFfi(), o.offset, o.metadata) }
        return mapped { native.alterGroupOffsets(groupId, list) }
            .associate { it.partition.toApi() to it.error.toResult() }
    }

    /** Deletes a group's committed offsets of [partitions]. */
    suspend fun deleteConsumerGroupOffsets(
        groupId: String,
        partitions: Collection<TopicPartition>,
    ): Map<TopicPartition, Result<Unit>> =
        mapped { native.deleteGroupOffsets(groupId, partitions.map { it.toFfi() }) }
            .associate { it.partition.toApi() to it.error.toResult() }

    /** Looks up offsets; with [readCommitted], `Latest` is the last stable offset. */
    suspend fun listOffsets(
        queries: Map<TopicPartition, OffsetSpec>,
        readCommitted: Boolean = false,
    ): Map<TopicPartition, Result<ListedOffset>> {
        val list = queries.map { (tp, spec) -> OffsetQuery(tp.toFfi(), spec.toFfi()) }
        return mapped { native.listOffsets(list, readCommitted) }.associate { o ->
            val error = o.error
            o.partition.toApi() to
                if (error != null) Result.failure(error.toException()) else Result.success(ListedOffset(o.offset, o.timestamp))
        }
    }

    /**
     * The quotas of the entities [filter] selects, with their values (the Java client's
     * `describeClientQuotas(filter).entities()`). Throws [KafkaException] `INVALID_REQUEST` for a
     * malformed filter, `UNSUPPORTED_VERSION` for an unknown entity type.
     */
    suspend fun describeClientQuotas(filter: ClientQuotaFilter = ClientQuotaFilter.all()): Map<ClientQuotaEntity, Map<String, Double>> =
        mapped { native.describeClientQuotas(filter.components.map { it.toFfi() }, filter.strict) }
            .associate { it.entity.toApi() to it.values }

    /**
     * Sets or removes client quotas (with [validateOnly], only checks them): one [Result] per
     * entity (the Java client's `alterClientQuotas(...).values()`; [all] gives `all()`). The
     * broker refuses an unknown key or entity type and a value that is not positive, or not
     * whole where the key needs it, with `INVALID_REQUEST`; the other alterations still apply.
     * An entity altered twice in one call reports its first failure.
     */
    suspend fun alterClientQuotas(
        entries: Collection<ClientQuotaAlteration>,
        validateOnly: Boolean = false,
    ): Map<ClientQuotaEntity, Result<Unit>> {
        val list = entries.toList()
        if (list.isEmpty()) return emptyMap()
        val results = mapped { native.alterClientQuotas(list.map { it.toFfi() }, validateOnly) }
        val out = LinkedHashMap<ClientQuotaEntity, Result<Unit>>()
        list.zip(results).forEach { (alteration, r) ->
            val result = r.error.toResult()
            if (out[alteration.entity]?.isFailure != true) out[alteration.entity] = result
        }
        return out
    }

    /** Closes connections and releases the client. */
    override fun close() {
        native.shutdown()
        native.destroy()
    }
}
