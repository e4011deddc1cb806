import AMQPClient
import ArgumentParser
import AsyncHTTPClient
import BadgeWorker
import Foundation
import Logging

/// `badgepipe setup`: declares the topology, reports how its queues are replicated, and exits.
struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Declare the exchange, partition queues, dead queue and feedback exchange, then exit.",
        discussion: """
            With --management-url (BADGEPIPE_MANAGEMENT_URL, RabbitMQ's management API, e.g. \
            http://guest:guest@rabbit:15672), setup then prints each queue the pipeline owns (the partition queues, \
            the dead queue, and the queues bound to the feedback exchange) with its type, members and leader. On a \
            cluster, a queue that would not survive a node's loss (a classic queue, or a quorum queue with fewer \
            than three members, or than the cluster's nodes if fewer) is named in a warning on stderr, and setup \
            exits with status 3.
            """)

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var brokerVersion: BrokerVersionOptions
    @Option(help: "Partition queues (BADGEPIPE_PARTITIONS, default \(Topology.defaultPartitions)).") var partitions:
        Int?
    @Option(help: "RabbitMQ's management API, http://user:pass@host:15672 (BADGEPIPE_MANAGEMENT_URL).")
    var managementURL: String?

    func run() async throws {
        let count = try Settings.integer(
            partitions, "BADGEPIPE_PARTITIONS", name: "--partitions", default: Topology.defaultPartitions,
            range: 1...1024)
        let topology = broker.topology(partitions: count)
        let configuration = try broker.configuration()
        let logger = Logger(label: "amqp")
        let connection = try await AMQPConnection.connect(configuration, logger: logger)
        do {
            try await topology.prepare(on: connection, allowUnstableRouting: brokerVersion.allowed, logger: logger)
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        print(
            "declared \(topology.exchange) with \(count) partitions, \(topology.deadQueueName) and "
                + "\(topology.feedbackExchange)")
        guard let url = Settings.optional(managementURL, "BADGEPIPE_MANAGEMENT_URL") else { return }
        let warnings = try await report(topology, managementURL: url, virtualHost: configuration.virtualHost)
        for warning in warnings { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
        if !warnings.isEmpty { throw ExitCode(3) }
    }

    /// Prints each queue's replication; returns the warnings.
    private func report(_ topology: Topology, managementURL: String, virtualHost: String) async throws -> [String] {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let api = try ManagementAPI(url: managementURL, virtualHost: virtualHost, client: client)
            let nodes = try await api.nodes()
            print("cluster: \(nodes.count) node\(nodes.count == 1 ? "" : "s") (\(nodes.joined(separator: ", ")))")
            var names = (0..<topology.partitions).map(topology.queueName)
            names.append(topology.deadQueueName)
            names += try await api.queuesBound(to: topology.feedbackExchange)
            var warnings: [String] = []
            for name in names {
                guard let queue = try await api.queue(name) else {
                    warnings.append("\(name): not found by the management API")
                    continue
                }
                print(queue.summary)
                if let warning = queue.warning(clusterSize: nodes.count) { warnings.append(warning) }
            }
            try await client.shutdown()
            return warnings
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
