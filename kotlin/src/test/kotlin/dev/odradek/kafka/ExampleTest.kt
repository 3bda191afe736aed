package dev.odradek.kafka

import dev.odradek.kafka.examples.main as example
import java.io.ByteArrayOutputStream
import java.io.PrintStream
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.params.ParameterizedTest
import org.junit.jupiter.params.provider.MethodSource

/** The example program (examples/Example.kt) runs and round-trips its records. */
class ExampleTest {
    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.odradek.kafka.Brokers#both")
    fun `the example runs`(broker: Broker) {
        val captured = ByteArrayOutputStream()
        val saved = System.out
        System.setOut(PrintStream(captured, true))
        try {
            example(arrayOf(broker.bootstrap))
        } finally {
            System.setOut(saved)
        }
        val lines = captured.toString().lines()
        assertTrue("example: 10 records round-tripped" in lines, captured.toString())
        assertEquals(10, lines.count { Regex("""^example: \S+-\d@\d+ key-\S+=""").containsMatchIn(it) })
        assertTrue(lines.any { it.startsWith("example: assigned [") })
    }
}
