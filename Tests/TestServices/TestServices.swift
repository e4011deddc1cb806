import Foundation

/// The real services the integration tests use, read here and nowhere else: the variables `scripts/services env`
/// prints, each defaulting to what `scripts/services up` starts on this machine.
public enum TestServices {
    /// The broker: `BADGEPIPE_TEST_AMQP_URL`, else the local RabbitMQ.
    public static let amqpURL = environment["BADGEPIPE_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2F"

    /// The PostgreSQL database through which the tests make (and drop) their own databases and schemas:
    /// `BADGEPIPE_TEST_DATABASE_URL`, else the local development database.
    public static let databaseURL =
        environment["BADGEPIPE_TEST_DATABASE_URL"] ?? "postgres://badgepipe:badgepipe@127.0.0.1:5432/badgepipe"

    /// The CA that signed the local PostgreSQL's certificate: `BADGEPIPE_TEST_POSTGRES_CA`, else where
    /// `scripts/services` puts it.
    public static let postgresCA =
        environment["BADGEPIPE_TEST_POSTGRES_CA"]
        ?? repository.appendingPathComponent(".services/postgres-tls/ca.crt").path

    /// The shell command that runs `rabbitmqctl` on the test broker's node (arguments are appended):
    /// `BADGEPIPE_TEST_RABBITMQCTL`, else `scripts/services ctl`.
    public static let rabbitmqctl =
        environment["BADGEPIPE_TEST_RABBITMQCTL"] ?? repository.appendingPathComponent("scripts/services").path + " ctl"

    /// The three-node cluster of `scripts/services cluster up`, one URL per node in a comma-separated list:
    /// `BADGEPIPE_TEST_CLUSTER_AMQP_URLS`, else the ports that command uses.
    public static let clusterAMQPURLs =
        environment["BADGEPIPE_TEST_CLUSTER_AMQP_URLS"]
        ?? (1...3).map { "amqp://guest:guest@127.0.0.1:\(5680 + $0)/%2F" }.joined(separator: ",")

    /// The shell command that drives the cluster (`kill N`, `start N`, `stop N`, `await-quorum N`, `ctl N …`,
    /// `queues N …` are appended): `BADGEPIPE_TEST_CLUSTER_SERVICES`, else `scripts/services cluster`.
    public static let clusterServices =
        environment["BADGEPIPE_TEST_CLUSTER_SERVICES"]
        ?? repository.appendingPathComponent("scripts/services").path + " cluster"

    /// The management API of the cluster's first node: `BADGEPIPE_TEST_CLUSTER_MANAGEMENT_URL`, else its port.
    public static let clusterManagementURL =
        environment["BADGEPIPE_TEST_CLUSTER_MANAGEMENT_URL"] ?? "http://guest:guest@127.0.0.1:15681"

    /// The repository's root directory.
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static var environment: [String: String] { ProcessInfo.processInfo.environment }
}
