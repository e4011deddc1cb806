import AMQPClient
import Logging
import Synchronization

/// Publishes the API's writes to the events exchange with confirms, over one connection and channel that it opens
/// when first needed and again after the broker closed them. A write is answered `202` only once the broker
/// confirmed its event, and `503` when it could not be published (nothing was: a retried request with the same
/// `Idempotency-Key` takes effect once).
final class APIEventPublisher: Sendable {
    /// How long a write waits for the broker's confirm.
    static let confirmTimeout: Duration = .seconds(5)

    /// The broker's nodes: after a lost connection the next one is tried first.
    private let nodes: AMQPNodeRotation
    private let exchange: String
    private let logger: Logger
    /// The broker session (a connection and its channel in confirm mode): connecting, or open. Nil until the first
    /// write, and after a failure; concurrent writes share one connection attempt.
    private let session = Mutex<Task<Session, any Error>?>(nil)

    struct Session: Sendable {
        var connection: AMQPConnection
        var channel: AMQPChannel
    }

    init(configuration: AMQPConfiguration, exchange: String, logger: Logger) {
        self.nodes = AMQPNodeRotation(configuration)
        self.exchange = exchange
        self.logger = logger
    }

    /// Publishes `body` (an event for `recipient`, the routing key) and waits for the broker's confirm.
    func publish(_ body: [UInt8], recipient: String, eventID: String, type: String) async throws {
        let channel = try await openChannel()
        let confirmation = channel.publishInOrder(
            body, exchange: exchange, routingKey: recipient, mandatory: true,
            properties: AMQPProperties(
                contentType: "application/json", deliveryMode: .persistent, messageID: eventID, type: type))
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await confirmation.wait() }
                group.addTask {
                    try await Task.sleep(for: Self.confirmTimeout)
                    throw APIError(.notPublished, "the broker did not confirm in time", status: .serviceUnavailable)
                }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            drop(channel)
            throw error as? APIError
                ?? APIError(.notPublished, "the event was not published: \(error)", status: .serviceUnavailable)
        }
    }

    private func openChannel(again: Bool = true) async throws -> AMQPChannel {
        let (nodes, logger) = (nodes, logger)
        let task = session.withLock { current in
            if let current { return current }
            let connecting = Task {
                let connection = try await nodes.connect(logger: logger)
                let channel = try await connection.openChannel()
                try await channel.confirmSelect()
                return Session(connection: connection, channel: channel)
            }
            current = connecting
            return connecting
        }
        do {
            let open = try await task.value
            guard !open.connection.isClosed else {
                // The broker closed it since (a restart): one new connection.
                forget(task)
                guard again else { throw AMQPError(.connectionLost, "the connection closed") }
                return try await openChannel(again: false)
            }
            return open.channel
        } catch {
            forget(task)
            throw APIError(.notPublished, "the broker cannot be reached: \(error)", status: .serviceUnavailable)
        }
    }

    /// Forgets `task`'s session if it is still the current one.
    private func forget(_ task: Task<Session, any Error>) {
        session.withLock { current in
            if current == task { current = nil }
        }
    }

    private func drop(_ channel: AMQPChannel) {
        let task = session.withLock { $0 }
        guard let task else { return }
        forget(task)
        Task {
            if let open = try? await task.value, open.channel.id == channel.id { await open.connection.close() }
        }
    }

    /// Closes the broker session.
    func close() async {
        let task = session.withLock { current in
            defer { current = nil }
            return current
        }
        if let open = try? await task?.value { await open.connection.close() }
    }
}
