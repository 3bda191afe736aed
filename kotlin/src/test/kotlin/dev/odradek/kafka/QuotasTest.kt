package dev.odradek.kafka

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** Client quotas through the admin client: a round trip, and Kafka's errors for bad input. */
class QuotasTest {
    private fun entity(vararg parts: Pair<String, String?>) = ClientQuotaEntity(mapOf(*parts))

    private fun set(e: ClientQuotaEntity, key: String, value: Double?) =
        ClientQuotaAlteration(e, listOf(ClientQuotaAlteration.Op(key, value)))

    /** Exactly [e]'s components: a named one exactly, a default one as the default. */
    private fun only(e: ClientQuotaEntity) = ClientQuotaFilter.containsOnly(
        e.entries.map { (t, n) ->
            if (n == null) ClientQuotaFilterComponent.ofDefaultEntity(t) else ClientQuotaFilterComponent.ofEntity(t, n)
        },
    )

    /** Waits until [e]'s quotas are [want] (Kafka applies alterations a moment after answering). */
    private suspend fun Admin.awaitQuotas(e: ClientQuotaEntity, want: Map<String, Double>?) {
        val deadline = System.nanoTime() + 15_000_000_000L
        while (true) {
            val got = describeClientQuotas(only(e))[e]
            if (got == want) return
            check(System.nanoTime() < deadline) { "$e: $got, want $want" }
            delay(100)
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `quotas are altered, described and removed`(broker: Broker) = runBlocking {
        val user = Brokers.topicName("quota-user")
        val alice = entity(ClientQuotaEntity.USER to user)
        val aliceApp = entity(ClientQuotaEntity.USER to user, ClientQuotaEntity.CLIENT_ID to "app")
        Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
            val altered = admin.alterClientQuotas(
                listOf(
                    ClientQuotaAlteration(
                        alice,
                        listOf(
                            ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0),
                            ClientQuotaAlteration.Op("request_percentage", 12.5),
                        ),
                    ),
                    set(aliceApp, "consumer_byte_rate", 2048.0),
                ),
            )
            assertEquals(setOf(alice, aliceApp), altered.all().keys)
            admin.awaitQuotas(alice, mapOf("producer_byte_rate" to 1048576.0, "request_percentage" to 12.5))
            admin.awaitQuotas(aliceApp, mapOf("consumer_byte_rate" to 2048.0))

            // Not strict: every entity with this user.
            val withUser = admin.describeClientQuotas(
                ClientQuotaFilter.contains(listOf(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user))),
            )
            assertEquals(setOf(alice, aliceApp), withUser.keys)
            // Any client id (Kafka's MATCH_SPECIFIED) beside the user: only the pair.
            val pair = admin.describeClientQuotas(
                ClientQuotaFilter.containsOnly(
                    listOf(
                        ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user),
                        ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.CLIENT_ID),
                    ),
                ),
            )
            assertEquals(mapOf(aliceApp to mapOf("consumer_byte_rate" to 2048.0)), pair)

            // The default client id (a null name); a rate no test comes near.
            val anyClient = entity(ClientQuotaEntity.CLIENT_ID to null)
            admin.alterClientQuotas(listOf(set(anyClient, "consumer_byte_rate", 1073741824.0))).all()
            admin.awaitQuotas(anyClient, mapOf("consumer_byte_rate" to 1073741824.0))
            admin.alterClientQuotas(listOf(set(anyClient, "consumer_byte_rate", null))).all()
            admin.awaitQuotas(anyClient, null)

            // validateOnly checks and changes nothing.
            admin.alterClientQuotas(listOf(set(alice, "producer_byte_rate", 5.0)), validateOnly = true).all()
            admin.awaitQuotas(alice, mapOf("producer_byte_rate" to 1048576.0, "request_percentage" to 12.5))

            // Removal (null values).
            admin.alterClientQuotas(
                listOf(
                    ClientQuotaAlteration(
                        alice,
                        listOf(ClientQuotaAlteration.Op("producer_byte_rate", null), ClientQuotaAlteration.Op("request_percentage", null)),
                    ),
                    set(aliceApp, "consumer_byte_rate", null),
                ),
            ).all()
            admin.awaitQuotas(alice, null)
            admin.awaitQuotas(aliceApp, null)
            assertTrue(admin.alterClientQuotas(emptyList()).isEmpty())
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `bad quotas get INVALID_REQUEST per entity, bad filters their error`(broker: Broker) = runBlocking {
        val client = entity(ClientQuotaEntity.CLIENT_ID to Brokers.topicName("quota-bad"))
        Admin(mapOf("bootstrap.servers" to broker.bootstrap)).use { admin ->
            val bad = listOf(
                "negative" to set(client, "producer_byte_rate", -1.0),
                "zero" to set(client, "producer_byte_rate", 0.0),
                "fractional" to set(client, "producer_byte_rate", 1.5),
                "unknown key" to set(client, "no_such_rate", 1.0),
                "unknown entity type" to set(entity("group" to "g"), "producer_byte_rate", 1.0),
                "key of another entity type" to set(entity(ClientQuotaEntity.IP to "10.0.0.1"), "producer_byte_rate", 1.0),
            )
            for ((what, alteration) in bad) {
                val r = admin.alterClientQuotas(listOf(alteration)).getValue(alteration.entity)
                val e = r.exceptionOrNull() as? KafkaException ?: error("$what: accepted")
                assertEquals(KafkaException.INVALID_REQUEST, e.code, "$what: ${e.message}")
                assertEquals("INVALID_REQUEST", e.codeName)
                assertTrue(!e.isRetriable && !e.isFatal, what)
            }
            // One refused beside one accepted: each entity its own outcome; all() throws the failure.
            val good = entity(ClientQuotaEntity.CLIENT_ID to Brokers.topicName("quota-good"))
            val both = admin.alterClientQuotas(listOf(set(client, "producer_byte_rate", -5.0), set(good, "producer_byte_rate", 4096.0)))
            assertTrue(both.getValue(good).isSuccess, both.toString())
            val thrown = assertThrows<KafkaException> { both.all() }
            assertEquals(KafkaException.INVALID_REQUEST, thrown.code)
            admin.awaitQuotas(good, mapOf("producer_byte_rate" to 4096.0))
            admin.awaitQuotas(client, null)
            admin.alterClientQuotas(listOf(set(good, "producer_byte_rate", null))).all()

            // Describe: an unknown entity type is UNSUPPORTED_VERSION, an IP with a user INVALID_REQUEST.
            val unknown = assertThrows<KafkaException> {
                runBlocking {
                    admin.describeClientQuotas(ClientQuotaFilter.contains(listOf(ClientQuotaFilterComponent.ofEntityType("group"))))
                }
            }
            assertEquals(KafkaException.UNSUPPORTED_VERSION, unknown.code, unknown.message)
            val mixed = assertThrows<KafkaException> {
                runBlocking {
                    admin.describeClientQuotas(
                        ClientQuotaFilter.contains(
                            listOf(
                                ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.IP),
                                ClientQuotaFilterComponent.ofEntityType(ClientQuotaEntity.USER),
                            ),
                        ),
                    )
                }
            }
            assertEquals(KafkaException.INVALID_REQUEST, mixed.code, mixed.message)
        }
    }
}
