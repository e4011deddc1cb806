import BadgeCore
import BadgeStore
import BadgeWire
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``PushDispatcher``), on its own, beside
/// the partition's ingestion. After a round whose claim took everything due, it waits on the partition's
/// ``Doorbell`` (rung by ingestion after each commit and by every lease round) and looks again every `idlePoll`,
/// or when the earliest retry it scheduled becomes due; only a claim that reached the round's size is followed by
/// the next one at once. So a round's outcomes are recorded with the next round's claim, when new pushes are
/// committed, or at the latest after `idlePoll`: under a steady trickle of events that saves the empty claim that
/// would otherwise follow every round (a transaction of five statements, about a third of all claims at 1,000
/// events/s). What is sent but not recorded stays one round, as before: the window in which a crash sends it
/// again is one round's pushes, now for up to `idlePoll` when the partition goes quiet.
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
            await doorbell.wait(upTo: wait, ringsSeen: ringsSeen)
        }
        try await dispatcher.record(pending)
    }
}
