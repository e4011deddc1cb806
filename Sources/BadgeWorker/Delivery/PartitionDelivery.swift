import BadgeCore
import BadgeStore
import BadgeWire
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``PushDispatcher``), on its own, beside
/// the partition's ingestion. It waits on the partition's ``Doorbell`` when nothing is due (rung by ingestion
/// after each commit and by every lease round) and looks again every `idlePoll` for pushes whose retry became due.
/// It ends when the doorbell closes (after its round in progress, whose outcomes it records: never half-way, a push
/// sent but not recorded would be sent again) or with the first error (`lease_lost` when the partition moved on).
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
            let round = try await dispatcher.deliverRound(partition: partition, term: term, recording: pending)
            pending = round.record
            if let at = round.nextRetryAt { nextRetryAt = min(nextRetryAt ?? at, at) }
            guard round.claimed == 0 else { continue }
            var wait = idlePoll
            let now = Timestamp.now().microsecondsSinceEpoch
            if let at = nextRetryAt {
                if at <= now {
                    nextRetryAt = nil
                    continue
                }
                wait = min(wait, .microseconds(at - now))
            }
            await doorbell.wait(upTo: wait)
        }
        try await dispatcher.record(pending)
    }
}
