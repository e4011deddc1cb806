import BadgeCore
import BadgeStore
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``DeliveryRounds``), on its own, beside
/// the partition's ingestion, which rings the partition's ``Doorbell`` when it commits pushes. Every push goes out
/// through a claim of this loop.
///
/// When to claim, when to record a round's outcomes (with the next claim or on their own) and how long to wait are
/// the decisions of ``DeliveryStateMachine``, which this type drives: it observes the doorbell and the clock, and
/// carries out the actions. A push stays sent but not recorded (what a crash would send again, with the same
/// `apns-id`) for a round plus `recordDelay` at most.
///
/// It ends when the doorbell closes (after its round in progress, whose outcomes it records: never half-way, a
/// push sent but not recorded would be sent again) or with the first error (`lease_lost` when the partition moved
/// on).
struct PartitionDelivery: Sendable {
    let rounds: DeliveryRounds
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

    func run() async throws {
        var loop = DeliveryStateMachine(heldBackPoll: heldBackPoll, recordDelay: recordDelay)
        while true {
            let action = loop.next(
                DeliveryStateMachine.Observation(closed: doorbell.isClosed, rings: doorbell.rings, now: .now))
            switch action {
            case .claim(let recording):
                // The claim covers the rings so far: it begins after them.
                let rings = doorbell.rings
                let round = try await rounds.deliverRound(partition: partition, term: term, recording: recording)
                loop.claimed(round, ringsSeen: rings)
            case .record(let outcomes):
                try await rounds.record(outcomes)
                loop.recorded(at: .now)
            case .lookAhead:
                if let partition {
                    let ahead = try await rounds.ahead(partition: partition, term: term)
                    loop.lookedAhead(ahead, at: .now)
                    if !ahead.heldBy.isEmpty { wakePartitions(ahead.heldBy) }
                } else {
                    // Every partition at once (no partition of its own): nothing to look ahead in.
                    loop.lookedAhead(OutboxAhead(retryIn: nil, heldBack: true), at: .now)
                }
            case .wait(let limit, let ringsSeen):
                await doorbell.wait(upTo: limit, ringsSeen: ringsSeen)
            case .finish(let outcomes):
                try await rounds.record(outcomes)
                return
            }
        }
    }
}
