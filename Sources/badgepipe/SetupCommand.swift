import AMQPClient
import ArgumentParser
import BadgeWorker

/// `badgepipe setup`: declares the topology and exits.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup", abstract: "Declare the exchange, partition queues and dead-letter queue, then exit.")

    @Option(help: "Broker URL (BADGEPIPE_AMQP_URL).") var amqpURL: String?
    @Option(help: "Partition queues (BADGEPIPE_PARTITIONS, default 8).") var partitions: Int?

    func run() async throws {
        let connection = try await AMQPConnection.connect(AMQPConfiguration(url: Settings.amqpURL(amqpURL)))
        let channel = try await connection.openChannel()
        let count = partitions ?? Int(Settings.value(nil, "BADGEPIPE_PARTITIONS", default: "8")) ?? 8
        try await Topology(partitions: count).declare(on: channel)
        await connection.close()
        print("declared \(Topology.eventsExchange) with \(count) partitions and \(Topology.deadQueue)")
    }
}
