package dev.odradek.kafka

/** Turns a key or value into bytes (the Java client's `Serializer`, without configure). */
fun interface Serializer<T> {
    /** The bytes of [data] for [topic]; `null` stays null. */
    fun serialize(topic: String, data: T?): ByteArray?
}

/** Turns bytes back into a key or value (the Java client's `Deserializer`). */
fun interface Deserializer<T> {
    /** The value of [data] read from [topic]; `null` stays null. */
    fun deserialize(topic: String, data: ByteArray?): T?
}

/** Bytes as they are. */
object ByteArraySerializer : Serializer<ByteArray> {
    override fun serialize(topic: String, data: ByteArray?): ByteArray? = data
}

/** Bytes as they are. */
object ByteArrayDeserializer : Deserializer<ByteArray> {
    override fun deserialize(topic: String, data: ByteArray?): ByteArray? = data
}

/** UTF-8 strings. */
object StringSerializer : Serializer<String> {
    override fun serialize(topic: String, data: String?): ByteArray? = data?.toByteArray(Charsets.UTF_8)
}

/** UTF-8 strings. */
object StringDeserializer : Deserializer<String> {
    override fun deserialize(topic: String, data: ByteArray?): String? = data?.toString(Charsets.UTF_8)
}

/** A configuration map as the native layer takes it: property names to strings. */
internal fun stringify(config: Map<String, Any?>): Map<String, String> =
    config.entries.associate { (k, v) -> k to (v?.toString() ?: "") }
