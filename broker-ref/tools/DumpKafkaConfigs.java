// Prints Apache Kafka's broker and group config definitions as tab-separated tables, read from
// Kafka's own ConfigDefs (never from its documentation): the facts behind
// broker-ref/src/config/kafka_broker_keys.tsv and kafka_group_keys.tsv.
//
// Run as a single-file program (Java 17+) with the Kafka jars on the classpath; the wrapper
// broker-ref/tools/dump_kafka_configs.sh does that and writes the two files:
//   java -cp "$(tests/compat/kafka.sh classpath)" broker-ref/tools/DumpKafkaConfigs.java broker|group
//
// Columns (broker): name, type, default, validator, update mode, internal, defined in.
// Columns (group):  name, type, default, validator, broker synonym, internal.
//   type       ConfigDef.Type (BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD)
//   default    ConfigDef.convertToString of the default; `<required>` when the key has none and
//              `<null>` when the default is null
//   validator  the validator's toString(), empty when there is none
//   update     DynamicBrokerConfig.dynamicConfigUpdateModes(): read-only, per-broker, cluster-wide
//   synonym    GroupConfig.brokerSynonym: the broker key that supplies the group key's default
//   defined in `config` for KafkaConfig's ConfigDef (what DescribeConfigs lists); `dynamic` for
//              the keys only DynamicConfig.Broker defines (replication throttles: settable
//              dynamically, not listed by DescribeConfigs unless set)
// Tabs, newlines and backslashes in a field are written as \t, \n and \\.

import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.coordinator.group.GroupConfig;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class DumpKafkaConfigs {
    static String esc(String s) {
        return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "");
    }

    static String defaultOf(ConfigDef.ConfigKey k) {
        if (!k.hasDefault()) return "<required>";
        if (k.defaultValue == null) return "<null>";
        return esc(ConfigDef.convertToString(k.defaultValue, k.type));
    }

    static String validatorOf(ConfigDef.ConfigKey k) {
        return k.validator == null ? "" : esc(String.valueOf(k.validator));
    }

    public static void main(String[] args) {
        String what = args.length == 1 ? args[0] : "";
        StringBuilder out = new StringBuilder();
        if (what.equals("broker")) {
            Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
            Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys());
            // Scala's KafkaConfig.configDef is the one the broker validates with; it must agree.
            var scala = kafka.server.KafkaConfig$.MODULE$.configDef().configKeys().keySet();
            if (!scala.equals(keys.keySet())) {
                System.err.println("KafkaConfig.configDef and AbstractKafkaConfig.CONFIG_DEF differ");
                System.exit(1);
            }
            Map<String, ConfigDef.ConfigKey> all = new TreeMap<>(keys);
            for (var e : DynamicConfig.Broker.configKeys().entrySet()) {
                all.putIfAbsent(e.getKey(), e.getValue());
            }
            out.append("# name\ttype\tdefault\tvalidator\tupdate\tinternal\tdefined-in\n");
            for (ConfigDef.ConfigKey k : all.values()) {
                out.append(k.name).append('\t').append(k.type).append('\t').append(defaultOf(k))
                    .append('\t').append(validatorOf(k)).append('\t')
                    .append(modes.getOrDefault(k.name, "read-only")).append('\t')
                    .append(k.internalConfig).append('\t')
                    .append(keys.containsKey(k.name) ? "config" : "dynamic").append('\n');
            }
            for (String name : modes.keySet()) {
                if (!all.containsKey(name)) {
                    System.err.println("dynamic key without a definition: " + name);
                    System.exit(1);
                }
            }
        } else if (what.equals("group")) {
            Map<String, ConfigDef.ConfigKey> keys = new TreeMap<>(GroupConfig.CONFIG_DEF.configKeys());
            out.append("# name\ttype\tdefault\tvalidator\tbroker-synonym\tinternal\n");
            for (ConfigDef.ConfigKey k : keys.values()) {
                Optional<String> synonym = GroupConfig.brokerSynonym(k.name);
                out.append(k.name).append('\t').append(k.type).append('\t').append(defaultOf(k))
                    .append('\t').append(validatorOf(k)).append('\t').append(synonym.orElse(""))
                    .append('\t').append(k.internalConfig).append('\n');
            }
        } else {
            System.err.println("usage: DumpKafkaConfigs broker|group");
            System.exit(2);
        }
        System.out.print(out);
    }
}
