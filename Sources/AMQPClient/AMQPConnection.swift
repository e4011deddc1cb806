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
    /// What the connection was created with.
    public let configuration: AMQPConfiguration
    /// The heartbeat interval agreed with the broker, in seconds (0: none).
    public let heartbeatSeconds: Int
    /// `connection.blocked` / `unblocked` notices and the final close, in order.
    public let events: AsyncStream<AMQPConnectionEvent>

    let mailbox: Mailbox
    private let signal: CloseSignal<AMQPError?>

    private init(
        configuration: AMQPConfiguration,
        heartbeatSeconds: Int,
        events: AsyncStream<AMQPConnectionEvent>,
        mailbox: Mailbox,
        signal: CloseSignal<AMQPError?>
    ) {
        self.configuration = configuration
        self.heartbeatSeconds = heartbeatSeconds
        self.events = events
        self.mailbox = mailbox
        self.signal = signal
    }

    deinit {
        // Nobody can use it any more: end the thread and the socket.
        mailbox.submit(Command(channel: 0, operation: .closeConnection, promise: nil))
    }

    /// Connects and logs in once; throws `AMQPError` (`connectionFailed`, `authenticationFailed`, `tls`).
    public static func connect(
        _ configuration: AMQPConfiguration,
        logger: Logger = Logger(label: "amqp")
    ) async throws -> AMQPConnection {
        let mailbox = try Mailbox()
        let signal = CloseSignal<AMQPError?>()
        let (events, eventsContinuation) = AsyncStream<AMQPConnectionEvent>.makeStream()
        let loop = ConnectionLoop(
            configuration: configuration, mailbox: mailbox, signal: signal, events: eventsContinuation, logger: logger)
        let negotiated = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<(heartbeat: Int, channelMax: Int), any Error>) in
            let thread = Thread { loop.main(started: continuation) }
            thread.name = "amqp-\(configuration.host):\(configuration.port)"
            thread.start()
        }
        return AMQPConnection(
            configuration: configuration, heartbeatSeconds: negotiated.heartbeat, events: events, mailbox: mailbox,
            signal: signal)
    }

    /// Connects, retrying with exponential backoff and jitter while the broker is unreachable (for example during
    /// a restart). Authentication, TLS and URL errors are not retried. Cancelling the task stops the retries.
    public static func connect(
        _ configuration: AMQPConfiguration,
        retry policy: AMQPRetryPolicy,
        logger: Logger = Logger(label: "amqp")
    ) async throws -> AMQPConnection {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await connect(configuration, logger: logger)
            } catch let error as AMQPError {
                let retryable =
                    error.code == .connectionFailed || error.code == .connectionLost
                    || error.code == .connectionClosed
                guard retryable, policy.maxAttempts.map({ attempt < $0 }) ?? true else { throw error }
                let delay = policy.delay(afterAttempt: attempt)
                logger.info(
                    "waiting for the broker, retrying",
                    metadata: [
                        "amqp.host": "\(configuration.host):\(configuration.port)", "amqp.attempt": "\(attempt)",
                        "amqp.retry_in_ms": "\(delay.milliseconds)",
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
