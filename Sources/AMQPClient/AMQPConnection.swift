import BadgeSupport
import Foundation
import Logging

/// A connection to a RabbitMQ broker.
///
/// Each connection is owned by one dedicated thread for its whole life (rabbitmq-c is not thread-safe);
/// every method here hands work to that thread and awaits its answer, so a connection can be shared freely
/// between tasks. The thread keeps servicing heartbeats however long the application takes to process what it
/// received.
///
/// ```swift
/// let connection = try await AMQPConnection.connect(AMQPConfiguration(url: "amqp://guest:guest@127.0.0.1/%2F"))
/// let channel = try await connection.openChannel()
/// try await channel.confirmSelect()
/// try await channel.publish(Array("hello".utf8), exchange: "", routingKey: "greetings")  // returns once confirmed
/// await connection.close()
/// ```
public final class AMQPConnection: Sendable {
    /// What the connection was created with (all the nodes it could try).
    public let configuration: AMQPConfiguration
    /// The position in `configuration.nodes` of the node this connection is open to.
    public let nodeIndex: Int
    /// The heartbeat interval agreed with the broker, in seconds (0: none).
    public let heartbeatSeconds: Int
    /// The broker's server properties from `connection.start` (`product`, `version`, `cluster_name`, …).
    public let serverProperties: AMQPTable
    /// `connection.blocked` / `unblocked` notices and the final close, in order.
    public let events: AsyncStream<AMQPConnectionEvent>

    let mailbox: Mailbox
    private let signal: CloseSignal<AMQPError?>

    private init(
        configuration: AMQPConfiguration,
        nodeIndex: Int,
        negotiated: ConnectionLoop.Negotiated,
        events: AsyncStream<AMQPConnectionEvent>,
        mailbox: Mailbox,
        signal: CloseSignal<AMQPError?>
    ) {
        self.configuration = configuration
        self.nodeIndex = nodeIndex
        self.heartbeatSeconds = negotiated.heartbeat
        self.serverProperties = negotiated.serverProperties
        self.events = events
        self.mailbox = mailbox
        self.signal = signal
    }

    deinit {
        // Nobody can use it any more: end the thread and the socket.
        mailbox.submit(Command(channel: 0, operation: .closeConnection, promise: nil))
    }

    /// The node this connection is open to.
    public var node: AMQPConfiguration.Node { configuration.nodes[nodeIndex] }

    /// The broker's version from its server properties (`"3.10.8"`), if it said.
    public var serverVersion: String? {
        switch serverProperties["version"] {
        case .string(let text)?: text
        case .bytes(let bytes)?: String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }

    /// Connects and logs in, trying each node once in turn from `startingAt` (modulo the count) while a node is
    /// unreachable (``AMQPError/isUnreachable``); throws the last node's error, or at once an error another node
    /// would not mend (`authenticationFailed`, `tls`). Logs the node it connected to and the broker's version.
    public static func connect(
        _ configuration: AMQPConfiguration,
        startingAt first: Int = 0,
        logger: Logger = Logger(label: "amqp")
    ) async throws -> AMQPConnection {
        let count = configuration.nodes.count
        var lastError: (any Error)?
        for offset in 0..<count {
            let index = ((first % count) + count + offset) % count
            do {
                let connection = try await connect(configuration, node: index, logger: logger)
                logger.info(
                    "connected to the broker",
                    metadata: [
                        "amqp.node": "\(connection.node)", "amqp.version": "\(connection.serverVersion ?? "unknown")",
                    ])
                return connection
            } catch let error as AMQPError where error.isUnreachable && offset + 1 < count {
                logger.info(
                    "broker node unreachable, trying the next",
                    metadata: [
                        "amqp.node": "\(configuration.nodes[index])", "amqp.error.message": "\(error.message)",
                    ])
                lastError = error
            }
        }
        throw lastError ?? AMQPError(.connectionFailed, "no broker node to connect to")
    }

    private static func connect(
        _ configuration: AMQPConfiguration,
        node index: Int,
        logger: Logger
    ) async throws -> AMQPConnection {
        let mailbox = try Mailbox()
        let signal = CloseSignal<AMQPError?>()
        let (events, eventsContinuation) = AsyncStream<AMQPConnectionEvent>.makeStream()
        let loop = ConnectionLoop(
            configuration: configuration.only(index), mailbox: mailbox, signal: signal, events: eventsContinuation,
            logger: logger)
        let negotiated = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<ConnectionLoop.Negotiated, any Error>) in
            let thread = Thread { loop.main(started: continuation) }
            thread.name = "amqp-\(configuration.nodes[index])"
            thread.start()
        }
        return AMQPConnection(
            configuration: configuration, nodeIndex: index, negotiated: negotiated, events: events, mailbox: mailbox,
            signal: signal)
    }

    /// Connects, retrying with exponential backoff and jitter while no node is reachable (for example during a
    /// restart): each round tries every node once from `startingAt`, and the backoff runs between rounds.
    /// Authentication, TLS and URL errors are not retried. Cancelling the task stops the retries.
    public static func connect(
        _ configuration: AMQPConfiguration,
        retry policy: AMQPRetryPolicy,
        startingAt first: Int = 0,
        logger: Logger = Logger(label: "amqp")
    ) async throws -> AMQPConnection {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await connect(configuration, startingAt: first, logger: logger)
            } catch let error as AMQPError {
                guard error.isUnreachable, policy.maxAttempts.map({ attempt < $0 }) ?? true else { throw error }
                let delay = policy.delay(afterAttempt: attempt)
                logger.info(
                    "waiting for the broker, retrying",
                    metadata: [
                        "amqp.nodes": "\(configuration.nodes.map(\.description).joined(separator: ","))",
                        "amqp.attempt": "\(attempt)", "amqp.retry_in_ms": "\(delay.milliseconds)",
                        "amqp.error.message": "\(error.message)",
                    ])
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Opens a new channel.
    public func openChannel() async throws -> AMQPChannel {
        let reply = try await AMQPChannel.send(Command.Operation.openChannel, channel: 0, mailbox: mailbox)
        guard case .channel(let id) = reply else { throw AMQPError(.library, "channel.open: unexpected reply") }
        return AMQPChannel(id: id, mailbox: mailbox)
    }

    /// Closes every channel (without `basic.cancel`, so unacked messages go back to their queues in order), then
    /// the connection. Publishes still waiting for a confirm fail with `publishUnconfirmed`.
    public func close() async {
        _ = try? await AMQPChannel.send(Command.Operation.closeConnection, channel: 0, mailbox: mailbox)
        _ = await signal.wait()
    }

    /// True once the connection has ended, for whatever reason.
    public var isClosed: Bool { signal.isResolved }

    /// Waits until the connection ends and returns why: nil when the application closed it, otherwise the error
    /// (`connectionClosed` with the broker's reply code, or `connectionLost`).
    public func closed() async -> AMQPError? {
        await signal.wait()
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}
