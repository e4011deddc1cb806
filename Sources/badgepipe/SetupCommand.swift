import AMQPClient
import ArgumentParser
import BadgeWorker

/// `badgepipe setup`: declares the topology and exits.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Declare the exchange, partition queues, dead-letter queue and feedback exchange, then exit.")

    @OptionGroup var broker: BrokerOptions
    @Option(help: "Partition queues (BADGEPIPE_PARTITIONS, default 8).") var partitions: Int?

    func run() async throws {
        let connection = try await AMQPConnection.connect(AMQPConfiguration(url: broker.url))
        let channel = try await connection.openChannel()
        let count = try Settings.integer(
            partitions, "BADGEPIPE_PARTITIONS", name: "--partitions", default: 8, range: 1...1024)
        let topology = broker.topology(partitions: count)
        // Checked before anything is declared: declaring would add the missing queues.
        try await topology.checkNoExtraPartition(on: connection)
        try await topology.checkNoMissingPartition(on: connection)
        try await topology.declare(on: channel)
        await connection.close()
        print(
            "declared \(topology.exchange) with \(count) partitions, \(topology.deadQueueName) and "
                + "\(topology.feedbackExchange)")
    }
}
