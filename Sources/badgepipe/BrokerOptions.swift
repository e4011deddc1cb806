import AMQPClient
import ArgumentParser
import BadgeWorker

/// Where the broker is and which of its names are this deployment's: `--amqp-url` and `--namespace`, taken the same
/// way by every command that talks to the broker (`worker`, `publish`, `setup`, `dead`).
struct BrokerOptions: ParsableArguments {
    @Option(help: "Broker URL (BADGEPIPE_AMQP_URL).") var amqpURL: String?
    @Option(
        help: """
            Prefix of every broker name (BADGEPIPE_NAMESPACE, default badgepipe); the workers and commands of one \
            deployment share it.
            """)
    var namespace: String?

    /// The broker when neither `--amqp-url` nor `BADGEPIPE_AMQP_URL` says otherwise: the local one.
    static let defaultURL = "amqp://guest:guest@127.0.0.1:5672/%2F"

    /// The broker URL: the flag, else `BADGEPIPE_AMQP_URL`, else ``defaultURL``.
    var url: String { Settings.value(amqpURL, "BADGEPIPE_AMQP_URL", default: Self.defaultURL) }

    /// The prefix of every broker name: the flag, else `BADGEPIPE_NAMESPACE`, else `badgepipe`.
    var resolvedNamespace: String { Settings.value(namespace, "BADGEPIPE_NAMESPACE", default: "badgepipe") }

    /// The topology's names in this namespace, with `partitions` partition queues.
    func topology(partitions: Int = 8) -> Topology {
        Topology(namespace: resolvedNamespace, partitions: partitions)
    }
}
