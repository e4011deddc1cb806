import AMQPClient
import BadgeWire

/// Reads and replays the parked messages of `badgepipe.dead` without losing or reordering any.
///
/// Reading (``scan(_:)``): a channel of its own consumes the messages the queue holds when it starts, with a
/// prefetch that covers them all, without acknowledging any, then closes: the broker hands every one back, in order,
/// ahead of those parked meanwhile (see ``DeadQueuePass``; at most 65,535 messages a pass, AMQP's largest prefetch).
/// A quorum queue counts each such return in the message's `x-delivery-count`; `badgepipe.dead` has no delivery
/// limit, so reading it never drops anything. (On RabbitMQ 4.0 to 4.2, whose quorum queues have a limit of 20 by
/// default and count these returns, give `badgepipe.dead` a `delivery-limit` policy of -1.)
///
/// Replaying (``replay(_:limit:dryRun:window:each:)``): each matching message is republished to the events exchange
/// with its original routing key, body and properties (``ParkedMessage/replayProperties``), mandatory and through
/// publisher confirms, in queue order; once the broker has confirmed it, and only then, it is acknowledged, which
/// removes it from the dead queue. The others are not acknowledged and come back in order when the channel closes.
/// Replaying twice has one effect: what a replay confirmed and acknowledged is gone, so the next replay does not
/// find it; a replay that dies between a confirm and its acknowledgement leaves that message parked, and replaying
/// it again publishes the event a second time, which the worker applies once (it keeps the ids of the events it
/// has applied).
public struct DeadQueue: Sendable {
    /// The broker connection to read and publish on.
    public let connection: AMQPConnection
    /// Names the dead queue and the events exchange.
    public let topology: Topology

    /// A view of `topology`'s dead queue through `connection`.
    public init(connection: AMQPConnection, topology: Topology) {
        self.connection = connection
        self.topology = topology
    }

    /// The messages ready in the dead queue now.
    public func depth() async throws -> Int {
        let channel = try await connection.openChannel()
        do {
            let info = try await channel.declareQueue(topology.deadQueueName, passive: true)
            try await channel.close()
            return Int(info.messageCount)
        } catch let error as AMQPError where error.replyCode == 404 {
            throw DeadQueueError(code: .notDeclared, message: "there is no queue \(topology.deadQueueName)")
        }
    }

    /// How much of the dead queue a pass read.
    public struct ScanSummary: Sendable, Hashable {
        /// Messages the queue held when the pass began.
        public var held: Int
        /// Messages read: fewer than ``held`` past 65,535 messages (AMQP's largest prefetch), or when the broker
        /// sent nothing for 5 s.
        public var read: Int
    }

    /// Hands the messages the dead queue holds now to `visit`, oldest first, until it returns false, and leaves
    /// every one of them in the queue, in order. (The pass reads on to the end all the same: see ``DeadQueuePass``.)
    @discardableResult
    public func scan(_ visit: (ParkedMessage) async throws -> Bool) async throws -> ScanSummary {
        var pass = try await DeadQueuePass.open(topology.deadQueueName, on: connection)
        do {
            var visiting = true
            while visiting, let message = try await pass.next() {
                visiting = try await visit(ParkedMessage(position: pass.read, message: message))
            }
            while try await pass.next() != nil {}
        } catch {
            try? await pass.close()
            throw error
        }
        // Closing hands back everything read, in order.
        try await pass.close()
        return ScanSummary(held: pass.depth, read: pass.read)
    }

    /// What a replay did with one message of the dead queue that matched its filter.
    public enum ReplayOutcome: Sendable, Hashable {
        /// Republished, confirmed, and removed from the dead queue.
        case replayed
        /// A dry run: it would have been replayed; it stays.
        case wouldReplay
        /// Nothing says where it was going (no original routing key): it stays.
        case noRoutingKey
        /// Older than the idempotency window (``ReplaySummary/tooOld``): it stays unless the replay is forced.
        case tooOld(age: Duration)
    }

    /// What a replay did.
    public struct ReplaySummary: Sendable, Hashable {
        /// Messages the queue held when the replay began.
        public var held = 0
        /// Messages of the dead queue read (fewer than ``held`` as in ``ScanSummary/read``).
        public var read = 0
        /// Those that matched the filter (replayable or not).
        public var matched = 0
        /// Those replayed (or, in a dry run, that would have been).
        public var replayed = 0
        /// Those left because nothing says where they were going.
        public var skipped = 0
        /// Those left because they are older than the idempotency window.
        public var tooOld = 0

        /// A summary of these counts.
        public init(held: Int = 0, read: Int = 0, matched: Int = 0, replayed: Int = 0, skipped: Int = 0) {
            self.held = held
            self.read = read
            self.matched = matched
            self.replayed = replayed
            self.skipped = skipped
        }
    }

    /// Republishes the parked messages that match `filter`, at most `limit` of them, in queue order, and removes
    /// each from the dead queue once the broker confirmed its republish (see the type's description); `each` hears
    /// of every matching message as it is settled. `dryRun` publishes and removes nothing. At most `window`
    /// republishes wait for their confirms at once. Only the messages the queue holds when the replay starts are
    /// read, so one that a worker parks again meanwhile is not replayed twice in one run.
    ///
    /// Throws ``DeadQueueError`` `replayFailed` when the broker does not confirm a republish (the events exchange
    /// routes it nowhere, or refuses it): that message and every later one stay parked; those confirmed before are
    /// removed.
    @discardableResult
    public func replay(
        _ filter: ParkedFilter, limit: Int? = nil, dryRun: Bool = false, window: Int = 64,
        idempotencyWindow: Duration? = Retention.Configuration.defaultAge,
        each: (ParkedMessage, ReplayOutcome) -> Void = { _, _ in }
    ) async throws -> ReplaySummary {
        let now = Timestamp.now()
        let publisher = try await connection.openChannel()
        var pass: DeadQueuePass
        do {
            try await publisher.confirmSelect()
            if !dryRun { try await checkExchange(on: publisher) }
            pass = try await DeadQueuePass.open(topology.deadQueueName, on: connection)
        } catch {
            try? await publisher.close()
            throw error
        }
        var summary = ReplaySummary(held: pass.depth)
        var failure: (any Error)?
        var pending: [(source: AMQPMessage, message: ParkedMessage, confirmation: AMQPPublishConfirmation)] = []
        var settled = 0
        // What each republished message was, to find it again if the broker hands it back (see `sweep`).
        var identities: [ParkedIdentity] = []
        var removed: [ParkedIdentity: Int] = [:]

        /// Waits for the oldest pending republish's confirm, then removes its message from the dead queue.
        func settleOldest() async {
            let entry = pending[settled]
            settled += 1
            do {
                try await entry.confirmation.wait()
                try await pass.remove(entry.source)
                removed[identities[settled - 1], default: 0] += 1
                summary.replayed += 1
                each(entry.message, .replayed)
            } catch {
                // Not confirmed (or the ack did not reach the broker): the message stays parked.
                if failure == nil { failure = error }
            }
        }

        do {
            // Read to the end whatever happens, so that what stays keeps its order (see `DeadQueuePass`).
            while let message = try await pass.next() {
                summary.read += 1
                guard failure == nil, limit.map({ summary.matched < $0 }) ?? true else { continue }
                var parked = ParkedMessage(position: pass.read, message: message)
                guard filter.matches(parked) else { continue }
                summary.matched += 1
                guard let routingKey = parked.originalRoutingKey else {
                    summary.skipped += 1
                    each(parked, .noRoutingKey)
                    continue
                }
                if let idempotencyWindow, let age = parked.age(at: now), age > idempotencyWindow {
                    summary.tooOld += 1
                    each(parked, .tooOld(age: age))
                    continue
                }
                if dryRun {
                    summary.replayed += 1
                    each(parked, .wouldReplay)
                    continue
                }
                let confirmation = publisher.publishInOrder(
                    parked.body, exchange: topology.exchange, routingKey: routingKey, mandatory: true,
                    properties: parked.replayProperties)
                identities.append(ParkedIdentity(parked))
                parked.body = []
                var source = message
                source.body = []
                pending.append((source, parked, confirmation))
                if pending.count - settled >= window { await settleOldest() }
            }
        } catch {
            if failure == nil { failure = error }
        }
        // What went out is settled whatever happened after: confirmed republishes leave the dead queue.
        while settled < pending.count { await settleOldest() }
        // Closing hands back, in order, every message read and not removed.
        try? await pass.close()
        try? await publisher.close()
        if !removed.isEmpty { try? await sweep(removed, expected: summary.held - summary.replayed) }
        if let failure {
            if failure is DeadQueueError { throw failure }
            throw DeadQueueError(
                code: .replayFailed,
                message:
                    "\(failure); \(summary.replayed) replayed before it, the rest stay in \(topology.deadQueueName)")
        }
        return summary
    }

    /// Removes again the replayed messages that came back to the dead queue after their ack.
    ///
    /// RabbitMQ 3.10's quorum queue client (in the broker's channel) holds acknowledgements back while more than
    /// 32 of its commands wait to be applied, and forgets them when the channel closes: the broker then hands those
    /// messages back as if never acknowledged. Replaying them again would only publish duplicates the worker
    /// ignores, but the dead queue must not show what was replayed. So when the queue holds more than `expected`
    /// after a replay, a pass looks for those messages, by what they were (``ParkedIdentity``), and removes them;
    /// up to five times.
    func sweep(_ removed: [ParkedIdentity: Int], expected: Int) async throws {
        for _ in 0..<5 {
            guard try await depth() > expected else { return }
            var pass = try await DeadQueuePass.open(topology.deadQueueName, on: connection)
            var left = removed
            var found = 0
            do {
                while let message = try await pass.next() {
                    let identity = ParkedIdentity(ParkedMessage(position: pass.read, message: message))
                    guard let count = left[identity], count > 0 else { continue }
                    left[identity] = count - 1
                    try await pass.remove(message)
                    found += 1
                }
            } catch {
                try? await pass.close()
                throw error
            }
            try await pass.close()
            // Nothing of ours: what made the queue longer was parked since (a worker parking a replayed event again).
            if found == 0 { return }
        }
    }

    /// Throws when the events exchange does not exist (a passive declare on `channel`).
    private func checkExchange(on channel: AMQPChannel) async throws {
        do {
            try await channel.declareExchange(topology.exchange, type: .modulusHash, passive: true)
        } catch let error as AMQPError where error.replyCode == 404 {
            throw DeadQueueError(
                code: .notDeclared,
                message: "there is no exchange \(topology.exchange) to replay to: run badgepipe setup")
        }
    }
}

/// What a parked message is, to recognise it again after the broker handed it back: its message id, the park
/// headers, and its body (by length and a 64-bit FNV-1a hash).
struct ParkedIdentity: Hashable {
    var messageID: String?
    var parkedAt: String?
    var error: String?
    var bodyCount: Int
    var bodyHash: UInt64

    init(_ message: ParkedMessage) {
        messageID = message.messageID
        parkedAt = message.properties.headers?[ParkHeaders.parkedAt]?.stringValue
        error = message.error
        bodyCount = message.body.count
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in message.body { hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01b3 }
        bodyHash = hash
    }
}
