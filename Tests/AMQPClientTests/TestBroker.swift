import AMQPClient
import Foundation
import TestServices

/// The real broker the integration tests use: `BADGEPIPE_TEST_AMQP_URL` (default: the one `scripts/services up`
/// starts), and a way to run `rabbitmqctl` against it for restarts and alarms.
enum TestBroker {
    static let url = TestServices.amqpURL

    static func configuration(heartbeat: Int = 30) throws -> AMQPConfiguration {
        var configuration = try AMQPConfiguration(url: url)
        configuration.heartbeatSeconds = heartbeat
        configuration.connectionName = "AMQPClientTests"
        return configuration
    }

    static func connect(heartbeat: Int = 30) async throws -> AMQPConnection {
        try await AMQPConnection.connect(configuration(heartbeat: heartbeat))
    }

    /// A name no other test run uses.
    static func uniqueName(_ prefix: String) -> String {
        "test.\(prefix).\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Declares quorum queue `queue` on a new channel of `connection` and publishes `count` messages to it, `m0`,
    /// `m1`, …, with confirms; returns that channel (for deleting the queue at the end).
    static func quorumQueue(
        _ queue: String, messages count: Int, on connection: AMQPConnection
    ) async throws
        -> AMQPChannel
    {
        let channel = try await connection.openChannel()
        try await channel.declareQueue(queue, arguments: ["x-queue-type": "quorum"])
        try await channel.confirmSelect()
        for index in 0..<count {
            try await channel.publish(Array("m\(index)".utf8), exchange: "", routingKey: queue)
        }
        return channel
    }

    /// Runs `rabbitmqctl` on the test broker's node (through `scripts/services ctl`, or the command in
    /// `BADGEPIPE_TEST_RABBITMQCTL`) and throws when it fails.
    static func rabbitmqctl(_ arguments: String...) throws {
        let command = TestServices.rabbitmqctl
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command + " " + arguments.joined(separator: " ")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw AMQPError(
                .library, "rabbitmqctl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
