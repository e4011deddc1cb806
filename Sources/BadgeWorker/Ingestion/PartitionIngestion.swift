import AMQPClient
import BadgeCore
import BadgeStore
import BadgeWire
import Logging
import Metrics

/// The ingestion stage of one partition queue: batches of messages taken at the worker's ingestion tick → decode →
/// one transaction (shared with the worker's other partitions of the same tick) → park invalid ones → ring the
/// partition's delivery loop when the transaction planned pushes, for it to claim them → one multiple-ack. It never waits for a provider.
///
/// A batch the database refuses because of the data of some of its events (a value PostgreSQL or SQLite cannot
/// store or index, see `StoreError.refusesInput`) is bisected (``PoisonBisector``): each culprit is parked in
/// `badgepipe.dead` with the database's one-line reason, and every other event of the batch takes effect, in
/// order.
struct PartitionIngestion: Sendable {
    let channel: AMQPChannel
    let parkChannel: AMQPChannel
    let buffer: MessageBuffer
    /// The worker's ingestion transactions, shared by its partitions.
    let ingestion: TransactionGroup<ApplyBatch, [AppliedEvent]>
    /// Rung after each commit: the partition's delivery loop has new pushes to send.
    let doorbell: Doorbell
    let configuration: WorkerConfiguration
    /// Where batches come from: the partition and, in a fleet, the lease they are consumed under.
    let context: ApplyContext
    let watchdog: Watchdog?
    var health: WorkerHealth? = nil
    /// The partition's prefetch, in bytes as well as messages: the ingestion stage is its only user.
    var prefetch: PrefetchBudget
    let logger: Logger

    /// The batch in progress, as the watchdog knows it.
    private var watchName: String { "partition \(context.partition ?? -1) batch" }

    /// Batch after batch: wait for a message, then for the worker's ingestion tick (``TransactionGroup``), and take
    /// what the buffer holds then.
    func run() async throws {
        var prefetch = self.prefetch
        while true {
            await buffer.waitForMessages()
            await ingestion.awaitTick(urgent: buffer.count >= configuration.batchSize)
            // Armed: the worker's next round waits for this partition's batch, so nothing here may wait before
            // the batch's first transaction is asked for (or the partition withdraws).
            let batch: [AMQPMessage]
            do {
                guard let taken = try buffer.takeAvailable(limit: configuration.batchSize) else {
                    ingestion.disarm()
                    return
                }
                batch = taken
            } catch {
                ingestion.disarm()
                throw error
            }
            guard let last = batch.last else {
                ingestion.disarm()
                continue
            }
            if let count = prefetch.took(count: batch.count, bytes: batch.reduce(0) { $0 + Self.weight(of: $1) }) {
                // Takes effect for the next messages; what is in flight stays.
                channel.queueQoS(prefetchCount: UInt16(count))
            }
            try await watchdog.watch(watchName) { try await process(batch, lastTag: last.deliveryTag) }
        }
    }

    /// Applies a batch taken at the tick (the partition is armed until its first transaction is asked for), parks
    /// its invalid events, acks it and hands its pushes on.
    private func process(_ batch: [AMQPMessage], lastTag: UInt64) async throws {
        var armed = true
        defer { if armed { ingestion.disarm() } }
        WorkerMetrics.eventsConsumed.increment(by: batch.count)
        var events: [Event] = []
        var sources: [AMQPMessage] = []
        var invalid: [(message: AMQPMessage, event: InvalidEvent)] = []
        var committed = Committed()
        let heldBack = HeldBack()
        events.reserveCapacity(batch.count)
        for message in batch {
            if message.bodySpilled {
                invalid.append((message, InvalidEvent.tooLarge(message.bodySize)))
                continue
            }
            switch EventDecoder.decode(body: message.body, contentType: message.properties.contentType) {
            case .success(let event):
                events.append(event)
                sources.append(message)
            case .failure(let event):
                invalid.append((message, event))
            }
        }
        // A batch of heavy events (notification_read with hundreds of ids each) is applied in several transactions,
        // in order, so that none does unbounded work; the batch is acked once, after the last.
        for range in Self.slices(of: events, maxWeight: configuration.maxTransactionWeight) {
            let slice = events[range]
            let started = ContinuousClock.now
            let first = armed
            armed = false
            do {
                do {
                    committed.add(try await apply(slice, armed: first))
                } catch let error as StoreError
                    where error.code == .readStateTooLarge || error.code == .batchTooLong
                {
                    // One of its read-state events changes too many rows for one transaction: the events before
                    // it, it in chunks (meanwhile, the messages that arrive for other users go through), the
                    // events after it. Or the transaction ran out of time: its events in halves at once (the slice
                    // alone again could run out of time as it did).
                    committed.add(
                        try await applyAlone(slice, heldBack: heldBack, halved: error.code == .batchTooLong))
                }
            } catch let error as StoreError where error.refusesInput {
                WorkerMetrics.databaseErrors(error).increment()
                logger.warning(
                    "the database refused a batch's data; looking for the culprit",
                    metadata: ["event.count": "\(slice.count)", "event.error": "\(error)"])
                try await isolate(Array(slice), sources: Array(sources[range]), refusal: error, into: &committed)
            }
            WorkerMetrics.batchTransaction.record(duration: ContinuousClock.now - started)
            WorkerMetrics.batchSize.record(slice.count)
            watchdog?.progressed(watchName)
        }
        // The heavy event's user's events that arrived during its chunks: after everything of the batch.
        try await applyHeldBack(heldBack)
        if armed {
            // No valid event: nothing to apply.
            armed = false
            ingestion.disarm()
        }
        // Parked after the batch's transactions (before its ack), so that the tick's round does not wait for the
        // broker's confirms.
        for (message, event) in invalid {
            try await park(message, reason: "\(event.code): \(event.message)", class: event.code.rawValue)
        }
        if !events.isEmpty {
            let now = Timestamp.now().microsecondsSinceEpoch
            for event in events {
                WorkerMetrics.eventLag.recordMicroseconds(max(0, now - event.occurredAt.microsecondsSinceEpoch))
            }
        }
        // Committed: the delivery stage may send the pushes now (not only after the ack's round trip to the
        // broker), and now, and only now, the broker may forget these messages. When the ack cannot reach the
        // broker (connection lost), the messages come back and find their effects already stored. The ack is
        // queued, not awaited: the next batch need not wait for the connection's thread to wake up and write it
        // (acks and the channel's close go out in order; a lost connection ends the consumer's stream).
        if committed.plannedPushes { doorbell.ring() }
        channel.queueAck(deliveryTag: lastTag, multiple: true)
        WorkerMetrics.eventsApplied.increment(by: events.count)
    }

    /// What a message weighs against the partition's prefetch in bytes (``PrefetchBudget``): its body's length,
    /// in memory or in a file.
    static func weight(of message: AMQPMessage) -> Int {
        message.bodySize
    }

    /// The work an event makes in a transaction, in rows: one, plus one per notification id it names.
    static func weight(of event: Event) -> Int { 1 + event.notificationIDs.count }

    /// `events` cut, in order, into consecutive slices of at most `maxWeight` (an event heavier than that alone).
    static func slices(of events: [Event], maxWeight: Int) -> [Range<Int>] {
        var slices: [Range<Int>] = []
        var start = 0
        var total = 0
        for (index, event) in events.enumerated() {
            let next = weight(of: event)
            if index > start, total + next > maxWeight {
                slices.append(start..<index)
                (start, total) = (index, 0)
            }
            total += next
        }
        if start < events.count { slices.append(start..<events.count) }
        return slices
    }

    /// Applies `events` in the worker's next shared ingestion transaction (``TransactionGroup``), or on their own
    /// when that transaction failed (so a refusal or a lost lease is this partition's alone, as if it had
    /// never been shared). `armed`: the batch's first transaction since the tick.
    private func apply(_ events: some Collection<Event>, armed: Bool) async throws -> [AppliedEvent] {
        let batch = ApplyBatch(events: Array(events), context: context)
        return try await ingestion.run(batch, weight: events.reduce(0) { $0 + Self.weight(of: $1) }, armed: armed)
    }

    /// Applies `events` in transactions of their own: all of them in one, unless a read-state event among them
    /// changes more rows than one transaction may (`read_state_too_large`). Then the events before it and the other
    /// users' events after it go first (each user's events keep their order; users' events are independent), then
    /// it alone in chunks (``applyInChunks(_:)``), then its user's events after it, each step the same way. A
    /// transaction of several events that ran out of time (`batch_too_long`) is applied again as two halves, in
    /// order, each the same way; one event alone is retried in place. With `halved`, the events start as two
    /// halves (they ran out of time together already). An event committed before a later one failed is a duplicate
    /// when the caller applies them again (bisecting a refusal): it has one effect.
    private func applyAlone(
        _ events: some Collection<Event>, heldBack: HeldBack? = nil, halved: Bool = false
    ) async throws -> [AppliedEvent] {
        var applied: [AppliedEvent] = []
        let all = Array(events)
        // Last in, first out.
        var pending =
            halved && all.count > 1 ? [Array(all[(all.count / 2)...]), Array(all[..<(all.count / 2)])] : [all]
        while let next = pending.popLast() {
            guard !next.isEmpty else { continue }
            do {
                applied += try await ingestion.alone(ApplyBatch(events: next, context: context))
            } catch let error as StoreError where error.code == .batchTooLong && next.count > 1 {
                // Last in, first out: the first half, then the second.
                let half = next.count / 2
                logger.info(
                    "a transaction ran out of time: its events go in halves",
                    metadata: ["event.count": "\(next.count)", "worker.error": "\(error.message)"])
                pending.append(Array(next[half...]))
                pending.append(Array(next[..<half]))
            } catch let error as StoreError where error.code == .readStateTooLarge {
                guard let heavy = next.firstIndex(where: { $0.id == error.subject }) else { throw error }
                if next.count == 1 {
                    applied += try await applyInChunks(next[heavy], heldBack: heldBack)
                    continue
                }
                let user = next[heavy].recipient
                let after = next[(heavy + 1)...]
                // Last in, first out: the others first, then the heavy event, then its user's later events.
                pending.append(after.filter { $0.recipient == user })
                pending.append([next[heavy]])
                pending.append(Array(next[..<heavy]) + after.filter { $0.recipient != user })
            }
        }
        return applied
    }

    /// Applies one read-state event chunk by chunk (``ApplyContext/chunked``), each chunk a transaction that
    /// changes at most ``ApplyContext/readStateChunk`` rows, until the last one records the event. With `heldBack`,
    /// the messages that arrive meanwhile go through between chunks (``goOnBeside(_:heldBack:)``).
    private func applyInChunks(_ event: Event, heldBack: HeldBack?) async throws -> [AppliedEvent] {
        var chunked = context
        chunked.chunked = true

        var chunks = 0
        let started = ContinuousClock.now
        while true {
            let applied = try await ingestion.alone(ApplyBatch(events: [event], context: chunked))
            chunked.resumeAfter = applied.first?.resumeAfter
            chunks += 1
            watchdog?.progressed(watchName)
            if applied.first?.unfinished == true, let heldBack {
                try await goOnBeside(event.recipient, heldBack: heldBack)
            }
            guard applied.first?.unfinished == true else {
                logger.info(
                    "a read-state event changed more rows than one transaction may: applied in chunks",
                    metadata: [
                        "event.id": "\(event.id)", "event.type": "\(event.type.rawValue)", "event.chunks": "\(chunks)",
                        "event.took": "\(ContinuousClock.now - started)",
                    ])
                return applied
            }
        }
    }

    /// Between two chunks of `user`'s heavy read-state event: the messages that arrived meanwhile (at most a batch)
    /// go through, so that one user's million rows hold up nobody else of the partition. Other users' events are
    /// applied (each user's in order) and their messages acked one by one (the heavy event's message, and the batch
    /// around it, stay unacked until it is done); invalid ones are parked and acked; `user`'s own wait in `heldBack`
    /// to go after everything of the batch.
    private func goOnBeside(_ user: String, heldBack: HeldBack) async throws {
        guard buffer.count > 0, let taken = try buffer.takeAvailable(limit: configuration.batchSize), !taken.isEmpty
        else { return }
        WorkerMetrics.eventsConsumed.increment(by: taken.count)
        var events: [Event] = []
        var sources: [AMQPMessage] = []
        for message in taken {
            let decoded =
                message.bodySpilled
                ? .failure(InvalidEvent.tooLarge(message.bodySize))
                : EventDecoder.decode(body: message.body, contentType: message.properties.contentType)
            switch decoded {
            case .success(let event) where event.recipient == user || heldBack.holds(event.recipient):
                heldBack.add(event, from: message)
            case .success(let event):
                events.append(event)
                sources.append(message)
            case .failure(let invalid):
                try await park(message, reason: "\(invalid.code): \(invalid.message)", class: invalid.code.rawValue)
                channel.queueAck(deliveryTag: message.deliveryTag, multiple: false)
            }
        }
        guard !events.isEmpty else { return }
        var committed = Committed()
        do {
            committed.add(try await applyAlone(events))
        } catch let error as StoreError where error.refusesInput {
            try await isolate(events, sources: sources, refusal: error, into: &committed)
        }
        if committed.plannedPushes { doorbell.ring() }
        for message in sources { channel.queueAck(deliveryTag: message.deliveryTag, multiple: false) }
        WorkerMetrics.eventsApplied.increment(by: events.count)
    }

    /// Applies the events ``goOnBeside(_:heldBack:)`` held back, in order, and acks their messages one by one.
    private func applyHeldBack(_ heldBack: HeldBack) async throws {
        guard !heldBack.events.isEmpty else { return }
        var committed = Committed()
        do {
            committed.add(try await applyAlone(heldBack.events))
        } catch let error as StoreError where error.refusesInput {
            try await isolate(heldBack.events, sources: heldBack.sources, refusal: error, into: &committed)
        }
        if committed.plannedPushes { doorbell.ring() }
        for message in heldBack.sources { channel.queueAck(deliveryTag: message.deliveryTag, multiple: false) }
        WorkerMetrics.eventsApplied.increment(by: heldBack.events.count)
    }

    /// Applies `events` slice by slice, parking those the database refuses on their own (see ``PoisonBisector``).
    private func isolate(
        _ events: [Event], sources: [AMQPMessage], refusal: StoreError, into committed: inout Committed
    ) async throws {
        var bisector = PoisonBisector(count: events.count)
        while true {
            switch bisector.next() {
            case .done:
                return
            case .apply(let range):
                do {
                    committed.add(try await applyAlone(events[range]))
                    bisector.applied()
                } catch let error as StoreError where error.refusesInput {
                    if range.count == 1 {
                        try await park(
                            sources[range.lowerBound], reason: "refused by the database: \(error)",
                            class: "refused_by_database")
                        bisector.refused()
                        bisector.parked()
                    } else {
                        bisector.refused()
                    }
                }
            case .park(let index):
                try await park(
                    sources[index], reason: "refused by the database: \(refusal)", class: "refused_by_database")
                bisector.parked()
            }
        }
    }

    /// Moves an invalid message to `badgepipe.dead` with its reason (``ParkHeaders``); returns once the broker
    /// confirmed it. `reasonClass` is the bounded class, for the `x-badgepipe-reason` header and the metric's label
    /// (a decoder code, or `refused_by_database`).
    private func park(_ message: AMQPMessage, reason: String, class reasonClass: String) async throws {
        let properties = ParkHeaders.stamped(
            message.properties, routingKey: message.routingKey, reason: reasonClass, error: reason, at: .now())
        // A body too long to keep in memory is read back from its file here, one message at a time per partition:
        // parked with its original body, as every invalid event is.
        try await parkChannel.publish(
            try message.wholeBody(), exchange: "", routingKey: configuration.topology.deadQueueName, mandatory: true,
            properties: properties)
        WorkerMetrics.eventsParked(reason: reasonClass).increment()
        logger.warning(
            "invalid event parked",
            metadata: ["event.message_id": "\(message.properties.messageID ?? "-")", "event.error": "\(reason)"])
    }
}

extension String {
    /// The text on one line.
    func replacingNewlines() -> String {
        String(map { $0.isNewline ? " " : $0 })
    }
}

extension PartitionIngestion {
    /// What a batch's transactions committed for the delivery stage: whether they planned pushes, for the
    /// partition's delivery loop to claim.
    struct Committed {
        var plannedPushes = false

        mutating func add(_ applied: [AppliedEvent]) {
            if !plannedPushes { plannedPushes = applied.contains { !$0.pushes.isEmpty } }
        }
    }
}

extension PartitionIngestion {
    /// The events of users whose heavy read-state event was being applied in chunks when they arrived (see
    /// ``PartitionIngestion/goOnBeside(_:heldBack:)``), with their messages, in arrival order: they go after it.
    /// Used by one partition's ingestion task only.
    final class HeldBack: @unchecked Sendable {
        private(set) var events: [Event] = []
        private(set) var sources: [AMQPMessage] = []
        private var users: Set<String> = []

        /// Whether `user` has events held back (its later events must wait behind them).
        func holds(_ user: String) -> Bool { users.contains(user) }

        func add(_ event: Event, from message: AMQPMessage) {
            events.append(event)
            sources.append(message)
            users.insert(event.recipient)
        }
    }
}
