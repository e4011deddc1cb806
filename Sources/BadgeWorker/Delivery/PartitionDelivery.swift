import BadgeCore
import BadgeStore
import BadgeWire
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``PushDispatcher``), on its own, beside
/// the partition's ingestion. After a round whose claim took everything due, it waits on the partition's
/// ``Doorbell`` (rung by ingestion after each commit and by every lease round) for a ring that came after its claim
/// began (earlier rings were for pushes that claim took), and looks again every `idlePoll`, or when the earliest
/// retry it scheduled becomes due; only a claim that reached the round's size is followed by the next one at once.
/// A round's outcomes are recorded with the next round's claim when new pushes come within `recordDelay` (at once
/// when they are already waiting: no more than a claim would cost), and on their own otherwise (a transaction with
/// fewer statements than a claim): a push stays sent but not recorded (what a crash would send again, with
/// the same `apns-id`) for one round plus `recordDelay` at most, by default zero.
///
/// It ends when the doorbell closes (after its round in progress, whose outcomes it records: never half-way, a
/// push sent but not recorded would be sent again) or with the first error (`lease_lost` when the partition moved
/// on).
struct PartitionDelivery: Sendable {
    let dispatcher: PushDispatcher
    let partition: Int?
    /// In a fleet, this worker's term on the partition's lease: pushes go out only within it.
    let term: LeaseTerm?
    let doorbell: Doorbell
    let idlePoll: Duration
    /// How long a round's outcomes may wait for the next claim before they are recorded on their own (see
    /// `WorkerConfiguration.deliveryRecordDelay`).
    var recordDelay = Duration.zero

    func run() async throws {
        // The earliest retry this loop scheduled and has not reached yet.
        var nextRetryAt: Int64?
        // The last round's outcomes, recorded with the next claim (or below, when the loop ends).
        var pending = DeliveryRecord()
        while !doorbell.isClosed {
            // Rings until now are for pushes committed before this claim, which it takes.
            let ringsSeen = doorbell.rings
            let round = try await dispatcher.deliverRound(partition: partition, term: term, recording: pending)
            pending = round.record
            if let at = round.nextRetryAt { nextRetryAt = min(nextRetryAt ?? at, at) }
            if round.moreDue { continue }
            var wait = idlePoll
            let now = Timestamp.now().microsecondsSinceEpoch
            if let at = nextRetryAt {
                if at <= now {
                    nextRetryAt = nil
                    continue
                }
                wait = min(wait, .microseconds(at - now))
            }
            if !pending.isEmpty {
                // Outcomes to record: with the next claim if new pushes come soon, otherwise on their own, so a
                // quiet partition does not leave them unrecorded (sent again after a crash) for a whole idle poll.
                let brief = min(wait, recordDelay)
                if brief > .zero { await doorbell.wait(upTo: brief, ringsSeen: ringsSeen) }
                if doorbell.rings > ringsSeen || doorbell.isClosed { continue }
                try await dispatcher.record(pending)
                pending = DeliveryRecord()
                wait -= brief
                if wait <= .zero { continue }
            }
            await doorbell.wait(upTo: wait, ringsSeen: ringsSeen)
        }
        try await dispatcher.record(pending)
    }
}
