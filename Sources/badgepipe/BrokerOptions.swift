import AMQPClient
import ArgumentParser
import BadgeWorker

/// Where the broker is and which of its names are this deployment's: `--amqp-url` and `--namespace`, taken the same
/// way by every command that talks to the broker (`worker`, `publish`, `setup`, `dead`).
struct BrokerOptions: ParsableArguments {
    @Option(name: WorkerSettings.amqpURL.optionName, help: WorkerSettings.amqpURL.help) var amqpURL: String?
    @Option(name: WorkerSettings.namespace.optionName, help: WorkerSettings.namespace.help) var namespace: String?

    /// The broker URL: the flag, else `BADGEPIPE_AMQP_URL`, else the local broker.
    var url: String { WorkerSettings.amqpURL.value(amqpURL) }

    /// The parsed URL (every node of the list).
    func configuration(defaultHeartbeatSeconds: Int = 30) throws -> AMQPConfiguration {
        try AMQPConfiguration(url: url, defaultHeartbeatSeconds: defaultHeartbeatSeconds)
    }

    /// The prefix of every broker name: the flag, else `BADGEPIPE_NAMESPACE`, else `badgepipe`.
    var resolvedNamespace: String { WorkerSettings.namespace.value(namespace) }

    /// The topology's names in this namespace, with `partitions` partition queues.
    func topology(partitions: Int = Topology.defaultPartitions) -> Topology {
        Topology(namespace: resolvedNamespace, partitions: partitions)
    }
}

/// `--allow-unstable-routing`, for the commands that declare the topology (`worker`, `setup`).
struct BrokerVersionOptions: ParsableArguments {
    @Flag(
        help: """
            Run on RabbitMQ 4.0 to 4.2, refused otherwise because their modulus-hash routing was not stable under \
            Khepri (BADGEPIPE_ALLOW_UNSTABLE_ROUTING=1); only for a broker known to run Mnesia.
            """)
    var allowUnstableRouting = false

    /// The flag, or `BADGEPIPE_ALLOW_UNSTABLE_ROUTING` set to `1` or `true`.
    var allowed: Bool {
        if allowUnstableRouting { return true }
        let value = Settings.optional(nil, "BADGEPIPE_ALLOW_UNSTABLE_ROUTING")?.lowercased()
        return value == "1" || value == "true"
    }
}
