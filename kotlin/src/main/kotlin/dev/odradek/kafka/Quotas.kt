package dev.odradek.kafka

import dev.odradek.kafka.ffi.QuotaChange
import dev.odradek.kafka.ffi.QuotaEntityPart
import dev.odradek.kafka.ffi.QuotaFilterPart
import dev.odradek.kafka.ffi.QuotaNameMatch
import dev.odradek.kafka.ffi.QuotaOp

// Client quotas as the Java client's org.apache.kafka.common.quota models them, for
// Admin.describeClientQuotas / Admin.alterClientQuotas.

/**
 * A quota entity (the Java client's `ClientQuotaEntity`): entity type ([USER], [CLIENT_ID],
 * [IP]) to name, a `null` name being the type's default entity.
 */
data class ClientQuotaEntity(val entries: Map<String, String?>) {
    override fun toString(): String = "ClientQuotaEntity(entries=$entries)"

    internal fun toFfi(): List<QuotaEntityPart> = entries.map { (t, n) -> QuotaEntityPart(t, n) }

    /** Entity types. */
    companion object {
        /** A user principal's name. */
        const val USER = "user"
        /** A client id. */
        const val CLIENT_ID = "client-id"
        /** A client IP address (only `connection_creation_rate`). */
        const val IP = "ip"

        /** Whether [entityType] is one of the types above. */
        @JvmStatic
        fun isValidEntityType(entityType: String?): Boolean = entityType == USER || entityType == CLIENT_ID || entityType == IP
    }
}

internal fun List<QuotaEntityPart>.toApi() = ClientQuotaEntity(associate { it.entityType to it.entityName })

/**
 * One component of a [ClientQuotaFilter] (the Java client's `ClientQuotaFilterComponent`): an
 * entity type and how the name matches; made with [ofEntity], [ofDefaultEntity] or
 * [ofEntityType].
 */
data class ClientQuotaFilterComponent(val entityType: String, val match: Match) {
    /** How the entity's name matches. */
    sealed class Match {
        /** Exactly [name]. */
        data class Exact(val name: String) : Match()
        /** The type's default entity. */
        data object Default : Match()
        /** Any entity that has the type, named or default (Kafka's `MATCH_SPECIFIED`). */
        data object Specified : Match()
    }

    internal fun toFfi(): QuotaFilterPart = QuotaFilterPart(
        entityType,
        when (match) {
            is Match.Exact -> QuotaNameMatch.Exact(match.name)
            Match.Default -> QuotaNameMatch.Default
            Match.Specified -> QuotaNameMatch.Any
        },
    )

    /** The Java client's factories. */
    companion object {
        /** The entity of [entityType] named [entityName]. */
        @JvmStatic
        fun ofEntity(entityType: String, entityName: String) = ClientQuotaFilterComponent(entityType, Match.Exact(entityName))

        /** The default entity of [entityType]. */
        @JvmStatic
        fun ofDefaultEntity(entityType: String) = ClientQuotaFilterComponent(entityType, Match.Default)

        /** Any entity of [entityType]. */
        @JvmStatic
        fun ofEntityType(entityType: String) = ClientQuotaFilterComponent(entityType, Match.Specified)
    }
}

/**
 * Which entities [Admin.describeClientQuotas] returns (the Java client's `ClientQuotaFilter`):
 * those matching every component; with [strict], only those with no other component.
 */
data class ClientQuotaFilter(val components: Collection<ClientQuotaFilterComponent>, val strict: Boolean) {
    /** The Java client's factories. */
    companion object {
        /** Entities matching [components], whatever other components they have. */
        @JvmStatic
        fun contains(components: Collection<ClientQuotaFilterComponent>) = ClientQuotaFilter(components, false)

        /** Entities matching [components] and having no other. */
        @JvmStatic
        fun containsOnly(components: Collection<ClientQuotaFilterComponent>) = ClientQuotaFilter(components, true)

        /** Every entity. */
        @JvmStatic
        fun all() = ClientQuotaFilter(emptyList(), false)
    }
}

/** Changes to one entity's quotas (the Java client's `ClientQuotaAlteration`). */
data class ClientQuotaAlteration(val entity: ClientQuotaEntity, val ops: Collection<Op>) {
    /** Sets [key] to [value], or removes it when [value] is `null`. */
    data class Op(val key: String, val value: Double?)

    internal fun toFfi(): QuotaChange = QuotaChange(entity.toFfi(), ops.map { QuotaOp(it.key, it.value) })
}
