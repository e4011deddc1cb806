import BadgeCore
import BadgeStore
import BadgeWire
import Logging

/// The delivery stage of one partition: rounds of claim → send → record (``PushDispatcher``), on its own, beside
/// the partition's ingestion, and rounds of the pushes that ingestion's transactions claimed themselves and handed
/// over through the partition's ``Doorbell`` (`ApplyContext.claimsPushes`), which go out at once, without a claim.
///
/// Handed pushes always go first: the loop takes them before each claim, and forgets those a claim took (possible
/// only once their hold ran out), so no push is sent twice. A claim runs at the start (what a previous run or owner
/// left), after a ring that came after the previous claim began (ingestion planned pushes it did not claim; a
/// lease round), every `idlePoll` while quiet, when the earliest retry a round scheduled becomes due, and at once
/// after a claim that reached the round's size.
/// A round's outcomes are recorded with the next claim when one comes within `recordDelay` (at once when a ring is
/// already waiting: no more than a claim would cost), and on their own otherwise (a transaction with fewer
/// statements than a claim). Handed rounds that follow each other without a pause gather their outcomes until the
/// loop pauses or they are ``handedRecordSize``, which are then recorded on their own beside the next round (one
/// record in flight at a time, finished before any claim), unless a claim comes next. A push stays sent but not
/// recorded (what a crash would send again, with the same `apns-id`) for a round (or ``handedRecordSize`` handed
/// pushes and the round after them) plus `recordDelay` at most.
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
    let idlePoll: Duration
    /// How long a round's outcomes may wait for the next claim before they are recorded on their own (see
    /// `WorkerConfiguration.deliveryRecordDelay`).
    var recordDelay = Duration.zero

    /// How many outcomes of handed rounds that follow each other without a pause wait to be recorded together at
    /// most (what a crash mid-stream sends again, with the same `apns-id`; at 2,000 events/s a partition's
    /// record then costs a statement every 8 pushes or so).
    static let handedRecordSize = 8

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { records in
            var loop = Loop(delivery: self)
            do {
                try await loop.run(records: &records)
            } catch {
                // A record in flight finishes first: what it removes went out.
                try? await loop.settle(&records)
                throw error
            }
        }
    }

    /// The loop's state: what it knows between rounds.
    private struct Loop {
        let delivery: PartitionDelivery
        /// The earliest retry this loop scheduled and has not reached yet.
        var nextRetryAt: Int64?
        /// The outcomes not recorded yet, recorded with the next claim (or on their own, or when the loop ends).
        var pending = DeliveryRecord()
        /// Whether to claim without a new ring: at the start, after a full round, on a due retry or an idle poll.
        var claimNow = true
        /// Rings the last claim covered: those up to when it began.
        var ringsSeen = 0
        /// Whether a record runs in `records` (at most one at a time).
        var recording = false

        init(delivery: PartitionDelivery) {
            self.delivery = delivery
        }

        /// Waits for the record in flight, if any (it throws what it threw).
        mutating func settle(_ records: inout ThrowingTaskGroup<Void, any Error>) async throws {
            guard recording else { return }
            recording = false
            try await records.next()
        }

        mutating func run(records: inout ThrowingTaskGroup<Void, any Error>) async throws {
            let (dispatcher, doorbell) = (delivery.dispatcher, delivery.doorbell)
            while !doorbell.isClosed {
                let handed = doorbell.takeHanded()
                if !handed.isEmpty {
                    let round: PushDispatcher.RoundResult
                    do {
                        round = try await dispatcher.deliverClaimed(handed, term: delivery.term)
                    } catch {
                        // What went out before did go out: record it even though the round failed.
                        try await settle(&records)
                        try await dispatcher.record(pending)
                        throw error
                    }
                    pending.add(round.record)
                    if let at = round.nextRetryAt { nextRetryAt = min(nextRetryAt ?? at, at) }
                    // Under load handed pushes can keep coming without a pause: once the outcomes waiting are
                    // `handedRecordSize` they are recorded, beside the next round, unless a claim comes next, which
                    // records them itself. (Recording each handed round's outcomes at once, or after 50 ms, cost
                    // 10-15 ms of p50 at 2,000 events/s: a statement for every few pushes.)
                    if pending.count >= PartitionDelivery.handedRecordSize, !claimNow, doorbell.rings == ringsSeen {
                        try await settle(&records)
                        let outcomes = pending
                        pending = DeliveryRecord()
                        records.addTask { try await dispatcher.record(outcomes) }
                        recording = true
                    }
                    continue
                }
                if claimNow || doorbell.rings > ringsSeen {
                    try await settle(&records)
                    ringsSeen = doorbell.rings
                    let round = try await dispatcher.deliverRound(
                        partition: delivery.partition, term: delivery.term, recording: pending)
                    doorbell.discardHanded(Set(round.ids))
                    pending = round.record
                    if let at = round.nextRetryAt { nextRetryAt = min(nextRetryAt ?? at, at) }
                    claimNow = round.moreDue
                    continue
                }
                var wait = delivery.idlePoll
                let now = Timestamp.now().microsecondsSinceEpoch
                if let at = nextRetryAt {
                    if at <= now {
                        nextRetryAt = nil
                        claimNow = true
                        continue
                    }
                    wait = min(wait, .microseconds(at - now))
                }
                try await settle(&records)
                if !pending.isEmpty {
                    // Outcomes to record: with the next claim if one comes soon, otherwise on their own, so a quiet
                    // partition does not leave them unrecorded (sent again after a crash) for a whole idle poll.
                    let brief = min(wait, delivery.recordDelay)
                    if brief > .zero { await doorbell.wait(upTo: brief, ringsSeen: ringsSeen) }
                    if doorbell.rings > ringsSeen || doorbell.isClosed { continue }
                    try await dispatcher.record(pending)
                    pending = DeliveryRecord()
                    wait -= brief
                    if wait <= .zero {
                        claimNow = true
                        continue
                    }
                    // Handed meanwhile: they go first.
                    if doorbell.hasHanded { continue }
                }
                await doorbell.wait(upTo: wait, ringsSeen: ringsSeen)
                // Neither rung nor handed anything: the idle poll (or a retry) is due.
                if doorbell.rings == ringsSeen, !doorbell.hasHanded { claimNow = true }
            }
            try await settle(&records)
            try await dispatcher.record(pending)
        }
    }
}
