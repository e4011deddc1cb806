import AMQPClient
import BadgeCore
import BadgeStore
import Logging
import Metrics

/// Processes one partition queue: batches of deliveries → decode → park invalid ones → one transaction →
/// one multiple-ack → pushes.
struct PartitionProcessor: Sendable {
    let channel: AMQPChannel
    let deadLetters: AMQPChannel
    let buffer: DeliveryBuffer
    let store: any BadgeStore
    let dispatcher: PushDispatcher
    let configuration: WorkerConfiguration
    /// Where batches come from: the partition and, in a fleet, the lease they are consumed under.
    let context: ApplyContext
    /// In a fleet, this worker's record of how long it surely holds the lease: pushes go out only within it.
    let term: LeaseTerm?
    let watchdog: Watchdog?
    let logger: Logger

    private static let processed = Counter(label: "badgepipe_events_processed_total")
    private static let parked = Counter(label: "badgepipe_events_parked_total")

    func run() async throws {
        let name = "partition \(context.partition ?? -1)"
        while true {
            guard let batch = try await buffer.take(limit: configuration.batchSize) else { return }
            if let last = batch.last {
                try await watchdog.watch(name + " batch") { try await process(batch, lastTag: last.deliveryTag) }
            } else if term != nil {
                // An idle tick: send what others planned into this partition's outbox meanwhile (a badge refresh
                // from a worker that lost the partition with a push on its way), even when no events come.
                try await watchdog.watch(name + " idle drain") {
                    try await dispatcher.drainOutbox(partition: context.partition, term: term)
                }
            }
        }
    }

    private func process(_ batch: [AMQPDelivery], lastTag: UInt64) async throws {
        var events: [Event] = []
        events.reserveCapacity(batch.count)
        for delivery in batch {
            switch EventDecoder.decode(body: delivery.body, contentType: delivery.properties.contentType) {
            case .success(let event):
                events.append(event)
            case .failure(let invalid):
                try await park(delivery, reason: "\(invalid.code): \(invalid.message)")
            }
        }
        if !events.isEmpty {
            let policy = configuration.badgePolicy
            let context = context
            let events = events
            _ = try await Retry.transient("apply", logger: logger) {
                try await store.apply(events, policy: policy, context: context)
            }
        }
        // Committed: now, and only now, the broker may forget these messages. When the ack cannot reach the broker
        // (connection lost), the messages come back and find their effects already stored; the pushes are sent
        // all the same, so that nobody else sends them again later.
        var ackFailure: (any Error)?
        do {
            try await channel.ack(deliveryTag: lastTag, multiple: true)
        } catch {
            ackFailure = error
        }
        Self.processed.increment(by: events.count)
        // Send what the partition's outbox holds: this batch's pushes, and any a timed-out attempt committed.
        if !events.isEmpty { try await dispatcher.drainOutbox(partition: context.partition, term: term) }
        if let ackFailure { throw ackFailure }
    }

    /// Moves an invalid message to `badgepipe.dead` with its reason; returns once the broker confirmed it.
    private func park(_ delivery: AMQPDelivery, reason: String) async throws {
        var properties = delivery.properties
        var headers = properties.headers ?? [:]
        headers[Topology.errorHeader] = .string(String(reason.prefix(1000)).replacingNewlines())
        headers["x-badgepipe-original-routing-key"] = .string(delivery.routingKey)
        properties.headers = headers
        try await deadLetters.publish(
            delivery.body, exchange: "", routingKey: configuration.topology.deadQueueName, mandatory: true,
            properties: properties)
        Self.parked.increment()
        logger.warning(
            "invalid event parked",
            metadata: ["event.message_id": "\(delivery.properties.messageID ?? "-")", "event.error": "\(reason)"])
    }
}

extension String {
    /// The text on one line.
    func replacingNewlines() -> String {
        String(map { $0.isNewline ? " " : $0 })
    }
}
