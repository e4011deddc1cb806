import BadgeSupport
import CRabbitMQ
import Logging
import Metrics

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The thread that owns one rabbitmq-c connection for its whole life.
///
/// rabbitmq-c connections are not thread-safe, and heartbeats are serviced only inside library calls, so a
/// dedicated thread loops: run the queued commands, read every frame the broker sent (messages, confirms,
/// returns, closes, heartbeats), then `poll` the socket and the mailbox's wake pipe. Everything else in the
/// program talks to it through the `Mailbox`. `@unchecked Sendable` because it is handed to its thread once and
/// only that thread touches it afterwards.
final class ConnectionLoop: @unchecked Sendable {
    /// State of one open channel.
    struct ChannelState {
        var confirms: ConfirmTracker<Command.Promise>?
        var consumers: [String: AMQPMessageHandler] = [:]
        /// Set once the channel is closed (by the broker or the application): why.
        var closed: AMQPError?
        /// Set while the application closes the channel: messages that still arrive are not handed out.
        var closing = false
    }

    /// Header that carries the delivery tag of a mandatory publish, so that a `basic.return` (which carries no
    /// tag) can be matched to its message.
    static let returnTagHeader = AMQPProperties.publishTagHeader

    let configuration: AMQPConfiguration
    let mailbox: Mailbox
    let signal: CloseSignal<AMQPError?>
    let events: AsyncStream<AMQPConnectionEvent>.Continuation
    var logger: Logger

    var connection: amqp_connection_state_t?
    var channels: [UInt16: ChannelState] = [:]
    var lastChannelID: UInt16 = 0
    var negotiatedHeartbeat: Int = 0
    var negotiatedChannelMax: Int = 0
    /// The broker's `connection.start` server properties (`product`, `version`, `cluster_name`, …).
    var serverProperties: AMQPTable = [:]
    /// Monotonic time (ns) when the broker last sent anything.
    var lastInbound: UInt64 = 0

    let publishedCounter = Counter(label: "amqp_messages_published_total")
    let confirmedCounter = Counter(label: "amqp_messages_confirmed_total")
    let failedPublishCounter = Counter(label: "amqp_messages_publish_failed_total")
    let deliveredCounter = Counter(label: "amqp_messages_delivered_total")
    let connectionLostCounter = Counter(label: "amqp_connections_lost_total")

    init(
        configuration: AMQPConfiguration,
        mailbox: Mailbox,
        signal: CloseSignal<AMQPError?>,
        events: AsyncStream<AMQPConnectionEvent>.Continuation,
        logger: Logger
    ) {
        self.configuration = configuration
        self.mailbox = mailbox
        self.signal = signal
        self.events = events
        self.logger = logger
    }

    /// The thread's body: connect, report the outcome, then serve until the connection ends.
    /// What login agreed with the broker.
    struct Negotiated: Sendable {
        var heartbeat: Int
        var channelMax: Int
        var serverProperties: AMQPTable
    }

    func main(started: CheckedContinuation<Negotiated, any Error>) {
        do {
            try connect()
        } catch {
            let failure = error
            _ = mailbox.finish(failure)
            signal.resolve(failure)
            events.finish()
            started.resume(throwing: failure)
            return
        }
        started.resume(
            returning: Negotiated(
                heartbeat: negotiatedHeartbeat, channelMax: negotiatedChannelMax, serverProperties: serverProperties))
        lastInbound = Self.monotonicNanoseconds()
        while connection != nil {
            for command in mailbox.takeAll() {
                if connection == nil {
                    command.fail(mailbox.finishedError ?? AMQPError(.connectionLost, "connection is gone"))
                } else {
                    execute(command)
                }
            }
            guard connection != nil else { break }
            pumpIncoming()
            guard connection != nil else { break }
            waitForActivity()
        }
    }

    /// Waits until the socket is readable, a command arrives, or it is time to service heartbeats.
    private func waitForActivity() {
        guard let connection else { return }
        if amqp_frames_enqueued(connection) != 0 || amqp_data_in_buffer(connection) != 0 { return }
        var fds = [
            pollfd(fd: amqp_get_sockfd(connection), events: Int16(POLLIN), revents: 0),
            pollfd(fd: mailbox.wakeReadFD, events: Int16(POLLIN), revents: 0),
        ]
        // A short timeout keeps heartbeats flowing: rabbitmq-c sends them from inside its read calls.
        let timeoutMilliseconds: Int32 = configuration.tls == nil ? 200 : 50
        let ready = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if ready > 0, fds[0].revents != 0 {
            lastInbound = Self.monotonicNanoseconds()
        }
        checkHeartbeatTimeout()
    }

    /// rabbitmq-c only notices a silent broker inside a blocking wait, and this loop never blocks in one, so the
    /// receive side of the heartbeat contract is enforced here: two intervals without a byte from the broker
    /// means it is gone.
    private func checkHeartbeatTimeout() {
        guard negotiatedHeartbeat > 0, connection != nil else { return }
        let silence = Self.monotonicNanoseconds() &- lastInbound
        let limit = UInt64(negotiatedHeartbeat) * 2 * 1_000_000_000
        if silence > limit {
            fatal(
                AMQPError(
                    .connectionLost,
                    "missed heartbeats: nothing from the broker for \(silence / 1_000_000) ms"
                        + " (heartbeat \(negotiatedHeartbeat) s)"))
        }
    }

    /// Ends the connection because of `error`: every waiter, publish and consumer learns why.
    func fatal(_ error: AMQPError) {
        guard let connection else { return }
        if error.code != .closedByClient {
            connectionLostCounter.increment()
            logger.warning(
                "AMQP connection ended",
                metadata: ["amqp.error.code": "\(error.code)", "amqp.error.message": "\(error.message)"])
        }
        amqp_destroy_connection(connection)
        self.connection = nil
        endAllChannels(error)
        for command in mailbox.finish(error) { command.fail(error) }
        let reported: AMQPError? = error.code == .closedByClient ? nil : error
        signal.resolve(reported)
        events.yield(.closed(reported))
        events.finish()
    }

    /// Fails everything that belongs to every channel.
    private func endAllChannels(_ error: AMQPError) {
        for id in channels.keys { endChannel(id, error) }
    }

    /// Marks a channel closed: unconfirmed publishes fail, consumers end.
    func endChannel(_ id: UInt16, _ error: AMQPError) {
        guard var state = channels[id], state.closed == nil else { return }
        let unconfirmedError: AMQPError
        if error.code == .closedByClient {
            unconfirmedError = AMQPError(.publishUnconfirmed, "the channel was closed before the broker confirmed")
        } else {
            unconfirmedError = AMQPError(
                .publishUnconfirmed, "no confirm before the channel ended: \(error.message)", replyCode: error.replyCode
            )
        }
        if var confirms = state.confirms {
            let pending = confirms.failAll()
            failedPublishCounter.increment(by: pending.count)
            for entry in pending { entry.waiter.resume(throwing: unconfirmedError) }
            state.confirms = confirms
        }
        for (_, handler) in state.consumers {
            handler.end(error.code == .closedByClient ? nil : error)
        }
        state.consumers = [:]
        state.closed = error
        channels[id] = state
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// rabbitmq-c's text for a status code.
    static func statusText(_ status: Int32) -> String {
        guard let text = amqp_error_string2(status) else { return "status \(status)" }
        return String(cString: text)
    }
}
