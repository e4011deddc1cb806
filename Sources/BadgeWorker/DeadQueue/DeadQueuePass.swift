import AMQPClient
import Synchronization

/// One pass over the dead queue, for ``DeadQueue``: a channel of its own with an exclusive consumer whose
/// prefetch covers what the queue holds when the pass begins. Nothing is acknowledged but what the caller removes;
/// closing the channel hands every other message back, in order, ahead of those parked since.
///
/// Why a consumer and not `basic.get`: the dead queue is a quorum queue, and RabbitMQ (3.10) hands messages taken
/// with `basic.get` back in no particular order when their channel closes, and messages requeued with
/// `basic.nack` in batches whose order is not kept either; those of a consumer come back in order. No
/// `basic.cancel` either: the channel is closed with the messages unacknowledged.
///
/// Why a pass always reads everything it can (``limit``), even when its caller wants no more: a quorum queue
/// serves the messages handed back before any other, in the order they were handed back, and puts the next ones
/// handed back behind them. A pass that read only the first few of the messages an earlier pass handed back would
/// put those few behind the rest. Reading them all hands them all back in order, ahead of those parked since.
///
/// Two consumers would split the queue between them, and the messages each hands back would no longer be in
/// order with the other's, so a pass runs alone: it holds the exclusive queue `<dead queue>.lock` (the broker
/// deletes it when the connection ends, however it ends), and refuses to start while the dead queue has a
/// consumer. (A quorum queue takes no exclusive consumer: `exclusive` is not enforced there.)
struct DeadQueuePass {
    /// AMQP's largest prefetch: a pass reads at most this many messages.
    static let maxRead = Int(UInt16.max)
    /// How long a pass waits for the broker's next message before it takes the queue as read.
    static let quietTime: Duration = .seconds(5)

    let connection: AMQPConnection
    let channel: AMQPChannel
    let queue: String
    /// Messages the queue held when the pass began.
    let depth: Int
    /// Messages the pass reads: all of them, up to ``maxRead``. The consumer's prefetch is as large, so the broker
    /// sends them all at once and never needs to be asked for more.
    var limit: Int { min(depth, Self.maxRead) }
    private let inbox: Inbox
    /// Messages read so far, and those of them removed.
    private(set) var read = 0
    private(set) var removed = 0

    /// Opens a pass over `queue` on a new channel of `connection`. Throws ``DeadQueueError`` `notDeclared` when
    /// the queue does not exist, `busy` when it has a consumer already.
    static func open(_ queue: String, on connection: AMQPConnection) async throws -> DeadQueuePass {
        let channel = try await connection.openChannel()
        do {
            do {
                try await channel.declareQueue(lockName(queue), durable: false, exclusive: true, autoDelete: true)
            } catch let error as AMQPError where error.replyCode == 405 {
                throw DeadQueueError(
                    code: .busy, message: "another badgepipe dead is reading \(queue): run one at a time")
            }
            let info: AMQPQueueInfo
            do {
                info = try await channel.declareQueue(queue, passive: true)
            } catch let error as AMQPError where error.replyCode == 404 {
                throw DeadQueueError(
                    code: .notDeclared,
                    message:
                        "there is no queue \(queue): check --namespace (BADGEPIPE_NAMESPACE), or run badgepipe setup")
            }
            guard info.consumerCount == 0 else {
                throw DeadQueueError(
                    code: .busy,
                    message:
                        "\(queue) has \(info.consumerCount) consumer(s): a pass beside them would see part of the queue "
                        + "and could disorder it; stop them first")
            }
            let depth = Int(info.messageCount)
            let inbox = Inbox()
            if depth > 0 {
                try await channel.qos(prefetchCount: UInt16(min(depth, maxRead)))
                try await channel.consume(
                    queue: queue, handler: AMQPMessageHandler(message: inbox.append, end: inbox.finish))
            }
            return DeadQueuePass(connection: connection, channel: channel, queue: queue, depth: depth, inbox: inbox)
        } catch {
            try? await channel.close()
            if let other = try? await connection.openChannel() {
                // Ours, unless another pass holds it (then the broker refuses, and it stays theirs).
                _ = try? await other.deleteQueue(lockName(queue))
                try? await other.close()
            }
            throw error
        }
    }

    /// The next message, in queue order; nil once ``limit`` messages are read, or when the broker sent nothing for
    /// a while (the queue held fewer than it said: something else took some).
    mutating func next() async throws -> AMQPMessage? {
        guard read < limit else { return nil }
        guard let message = try await inbox.next(timeout: Self.quietTime) else { return nil }
        read += 1
        return message
    }

    /// Removes a message read from the queue (acknowledges it).
    mutating func remove(_ message: AMQPMessage) async throws {
        try await channel.ack(deliveryTag: message.deliveryTag)
        removed += 1
    }

    /// Closes the channel, which hands back every message read and not removed, waits (up to 5 s) until the
    /// queue shows them again, so that what runs next sees the whole queue, and lets the next pass in.
    func close() async throws {
        // Acknowledgements the broker's channel holds back are forgotten when it closes (see
        // `DeadQueue.sweep`): give it a moment to pass them on.
        if removed > 0 { try await Task.sleep(for: .milliseconds(250)) }
        try await channel.close()
        let probe = try await connection.openChannel()
        let expected = depth - removed
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while expected > 0, clock.now < deadline {
            if Int(try await probe.declareQueue(queue, passive: true).messageCount) >= expected { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        try await probe.deleteQueue(Self.lockName(queue))
        try await probe.close()
    }

    /// The exclusive queue a pass holds while it runs.
    static func lockName(_ queue: String) -> String { "\(queue).lock" }
}

extension DeadQueuePass {
    /// The consumer's messages, handed over by the connection's thread, waited for with a time limit.
    final class Inbox: Sendable {
        private struct State {
            var messages: [AMQPMessage] = []
            var head = 0
            var end: (any Error)?? = nil
            var waiter: CheckedContinuation<Bool, Never>?
            var wait = 0
        }

        private let state = Mutex(State())

        /// Adds a message (the connection's thread).
        @Sendable func append(_ message: AMQPMessage) {
            state.withLock { state -> CheckedContinuation<Bool, Never>? in
                state.messages.append(message)
                defer { state.waiter = nil }
                return state.waiter
            }?.resume(returning: true)
        }

        /// The consumer ended (the connection's thread).
        @Sendable func finish(_ error: (any Error)?) {
            state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if state.end == nil { state.end = .some(error) }
                defer { state.waiter = nil }
                return state.waiter
            }?.resume(returning: true)
        }

        /// The next message; nil when none came within `timeout`; throws when the consumer ended with an error
        /// (nil when it ended cleanly).
        func next(timeout: Duration) async throws -> AMQPMessage? {
            while true {
                let taken = state.withLock { state -> Result<AMQPMessage?, any Error>? in
                    if state.head < state.messages.count {
                        defer {
                            state.head += 1
                            if state.head > 1024 {
                                state.messages.removeFirst(state.head)
                                state.head = 0
                            }
                        }
                        return .success(state.messages[state.head])
                    }
                    if let end = state.end { return end.map { .failure($0) } ?? .success(nil) }
                    return nil
                }
                if let taken { return try taken.get() }
                var timer: Task<Void, Never>?
                let arrived = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                    let wait = state.withLock { state -> Int? in
                        if state.head < state.messages.count || state.end != nil { return nil }
                        state.waiter = continuation
                        state.wait += 1
                        return state.wait
                    }
                    guard let wait else { return continuation.resume(returning: true) }
                    timer = Task { [self] in
                        do { try await Task.sleep(for: timeout) } catch { return }
                        state.withLock { state -> CheckedContinuation<Bool, Never>? in
                            guard state.wait == wait else { return nil }
                            defer { state.waiter = nil }
                            return state.waiter
                        }?.resume(returning: false)
                    }
                }
                timer?.cancel()
                if !arrived { return nil }
            }
        }
    }
}
