import BadgeCore
import BadgeStore
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``PushDispatcher``), on its own, beside
/// the partition's ingestion, and rounds of the pushes that ingestion's transactions claimed themselves and handed
/// over through the partition's ``Doorbell`` (`ApplyContext.claimsPushes`), which go out at once, without a claim.
///
/// Handed pushes always go first, and the loop forgets those a claim took (possible only once their hold ran out),
/// so no push is sent twice. When to claim, when to record a round's outcomes (with the next claim, on their own,
/// or aside, beside the next handed rounds) and how long to wait are the decisions of ``DeliveryStateMachine``,
/// which this type drives: it observes the doorbell and the clock, and carries out the actions. A push stays sent
/// but not recorded (what a crash would send again, with the same `apns-id`) for a round (or ``handedRecordSize``
/// handed pushes and the round after them) plus `recordDelay` at most.
///
/// It ends when the doorbell closes (after its round in progress, whose outcomes it records: never half-way, a
/// push sent but not recorded would be sent again) or with the first error (`lease_lost` when the partition moved
/// on). Handed pushes it did not get to stay in the outbox, claimed: the partition's next owner takes them at once.
struct PartitionDelivery: Sendable {
    let dispatcher: PushDispatcher
    let partition: Int?
    /// In a fleet, this worker's term on the partition's lease: pushes go out only within it.
    let term: LeaseTerm?
    let doorbell: Doorbell
    /// How often it looks again while its partition holds pushes held back (see `DeliveryStateMachine`).
    let heldBackPoll: Duration
    /// How long a round's outcomes may wait for the next claim before they are recorded on their own (see
    /// `WorkerConfiguration.deliveryRecordDelay`).
    var recordDelay = Duration.zero
    /// Wakes the delivery loops of these partitions if they run in this worker: those whose rows hold back this
    /// partition's pushes (see `OutboxAhead.heldBy`).
    var wakePartitions: @Sendable ([Int]) -> Void = { _ in }

    /// How many outcomes of handed rounds that follow each other without a pause wait to be recorded together at
    /// most (what a crash mid-stream sends again, with the same `apns-id`): under a steady stream a partition's
    /// record costs a statement for about this many pushes.
    static let handedRecordSize = 8

    func run() async throws {
        var loop = DeliveryStateMachine(
            heldBackPoll: heldBackPoll, recordDelay: recordDelay, handedRecordSize: PartitionDelivery.handedRecordSize)
        try await withThrowingTaskGroup(of: Void.self) { records in
            // Whether a record runs aside in `records` (at most one at a time).
            var recordingAside = false
            do {
                while true {
                    let action = loop.next(
                        DeliveryStateMachine.Observation(
                            closed: doorbell.isClosed, rings: doorbell.rings, hasHanded: doorbell.hasHanded,
                            now: .now))
                    if recordingAside, !action.runsBesideRecord {
                        recordingAside = false
                        try await records.next()
                        loop.recordedAside(at: .now)
                    }
                    switch action {
                    case .sendHanded:
                        let round: PushDispatcher.RoundResult
                        do {
                            round = try await dispatcher.deliverClaimed(doorbell.takeHanded(), term: term)
                        } catch {
                            // What went out before did go out: record it even though the round failed.
                            if recordingAside {
                                recordingAside = false
                                try await records.next()
                            }
                            try await dispatcher.record(loop.handedFailed())
                            throw error
                        }
                        loop.handedSent(round)
                    case .claim(let recording):
                        // The claim covers the rings so far: it begins after them.
                        let rings = doorbell.rings
                        let round = try await dispatcher.deliverRound(
                            partition: partition, term: term, recording: recording)
                        doorbell.discardHanded(Set(round.ids))
                        loop.claimed(round, ringsSeen: rings)
                    case .record(let outcomes):
                        try await dispatcher.record(outcomes)
                        loop.recorded(at: .now)
                    case .recordAside(let outcomes):
                        records.addTask { [dispatcher] in try await dispatcher.record(outcomes) }
                        recordingAside = true
                    case .awaitRecordAside:
                        // Awaited above; the loop is told again in case there was none to await.
                        loop.recordedAside(at: .now)
                    case .lookAhead:
                        if let partition {
                            let ahead = try await dispatcher.ahead(partition: partition, term: term)
                            loop.lookedAhead(ahead, at: .now)
                            if !ahead.heldBy.isEmpty { wakePartitions(ahead.heldBy) }
                        } else {
                            // Every partition at once (no partition of its own): nothing to look ahead in.
                            loop.lookedAhead(OutboxAhead(retryIn: nil, heldBack: true), at: .now)
                        }
                    case .wait(let limit, let ringsSeen):
                        await doorbell.wait(upTo: limit, ringsSeen: ringsSeen)
                    case .finish(let outcomes):
                        try await dispatcher.record(outcomes)
                        return
                    }
                }
            } catch {
                // A record aside finishes first: what it removes went out.
                if recordingAside { try? await records.next() }
                throw error
            }
        }
    }
}
