import BadgeCore
import BadgeDelivery
import BadgeStore
import Logging

/// Sends outbox pushes: one user's pushes one after another in the order they were planned (so `badge_version`
/// never goes backwards on a device), different users concurrently; then records them as sent.
struct PushDispatcher: Sendable {
    let store: any BadgeStore
    let sender: PushSender
    let builder: PushPayloadBuilder
    let concurrency: Int
    /// The deployment's badge policy, for alerts the push guard rebuilds.
    let policy: BadgePolicy
    let logger: Logger

    /// Sends everything the outbox still holds (of one partition, or all): what a previous run or a previous owner
    /// of the partition committed but did not get to send.
    ///
    /// With `term`, every push is claimed under its lease, and sent only while the term is valid: once the
    /// partition has a new owner, this worker sends nothing more of it (the claim, or the check before sending,
    /// fails with `lease_lost`).
    func drainOutbox(partition: Int?, term: LeaseTerm? = nil) async throws {
        while true {
            let pending = try await Retry.transient("read outbox", logger: logger) {
                try await store.pendingPushes(limit: 1000, partition: partition)
            }
            // Pushes a previous owner may have sent wait a while for it to record them (see `LeaseTerm`); the
            // partition's idle tick comes back for them.
            let ready = term.map { term in pending.filter { !term.isInDoubt($0) } } ?? pending
            if ready.isEmpty { return }
            logger.debug("sending outbox pushes", metadata: ["worker.pushes": "\(ready.count)"])
            try await send(ready, term: term)
        }
    }

    /// Sends pushes and records each as sent right after it went out (in the guard's transaction for the next
    /// push of the same user), so that an interruption leaves at most the pushes in flight unrecorded.
    func send(_ pushes: [OutboxPush], term: LeaseTerm?) async throws {
        var byUser: [String: [OutboxPush]] = [:]
        var order: [String] = []
        for push in pushes {
            if byUser[push.push.recipient] == nil { order.append(push.push.recipient) }
            byUser[push.push.recipient, default: []].append(push)
        }
        // One user's failure does not cancel the others: a cancelled user could be left with a push sent but not
        // recorded. Each stops on its own (a lost lease fails every user's next claim) and the first error is
        // thrown once all have. Each user's last push is recorded with the others' in one transaction at the end.
        let (failure, lastSent) = await withTaskGroup(of: Result<Int64?, any Error>.self) { group in
            var next = 0
            var failure: (any Error)?
            var lastSent: [Int64] = []
            func startNext() {
                guard failure == nil, next < order.count, let queue = byUser[order[next]] else { return }
                next += 1
                group.addTask {
                    do {
                        return .success(try await sendInOrder(queue, term: term))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            for _ in 0..<min(concurrency, order.count) { startNext() }
            while let result = await group.next() {
                switch result {
                case .success(let id): if let id { lastSent.append(id) }
                case .failure(let error): if failure == nil { failure = error }
                }
                startNext()
            }
            return (failure, lastSent)
        }
        try await Retry.transient("mark sent", logger: logger) { try await store.markSent(lastSent) }
        if let failure { throw failure }
    }

    /// One user's pushes, one after another. Returns the outbox row of the last one handled, which is not recorded
    /// yet (each of the others was, in the claim of the next).
    private func sendInOrder(_ pushes: [OutboxPush], term: LeaseTerm?) async throws -> Int64? {
        let lease = term?.lease
        var unrecorded: [Int64] = []
        var deadTokens: Set<String> = []
        for outbox in pushes {
            if deadTokens.contains(outbox.push.token) { continue }
            // The database-side guard: a device never gets an older badge_version than one already pushed there (a
            // worker that stalled past failover wakes up with stale pushes). Stale alerts come back rebuilt with
            // the current badge at a new version; stale badge-only pushes are superseded and dropped, and so is
            // whatever somebody else already sent.
            let sent = unrecorded
            let claimed: PlannedPush?
            do {
                claimed = try await Retry.transient("claim push", logger: logger) {
                    try await store.claimPush(outbox, policy: policy, recordingSent: sent, lease: lease)
                }
            } catch {
                // Typically `lease_lost`: the partition is someone else's now (its lease ran out during a database
                // outage, say). What went out did go out all the same: record it, or the new owner sends it again.
                try await Retry.transient("mark sent", logger: logger) { try await store.markSent(sent) }
                throw error
            }
            unrecorded = [outbox.id]
            let planned = outbox.push
            guard let push = claimed else {
                logger.info(
                    "push dropped: superseded or already sent",
                    metadata: ["push.token": "\(planned.token)", "push.badge_version": "\(planned.badgeVersion)"])
                continue
            }
            if push.badgeVersion != planned.badgeVersion {
                logger.info(
                    "stale alert rebuilt with the current badge",
                    metadata: [
                        "push.token": "\(planned.token)", "push.event_id": "\(planned.eventID)",
                        "push.badge_version": "\(push.badgeVersion)",
                    ])
            }
            // Claimed under the lease; sent only while this worker is sure it still holds it (see `LeaseTerm`,
            // `LeaseFence`). If not, the push stays in the outbox, claimed but unsent, and the partition's new owner
            // sends it.
            let fence = term.map { LeaseFence(term: $0, store: store, logger: logger) }
            switch try await sender.send(builder.build(push), fence: fence) {
            case .accepted:
                if let term, let fence, !term.isValid {
                    try await afterLateSend(push, outbox: outbox, fence: fence, partition: term.lease.partition)
                }
            case .rejected:
                break
            case .deadToken(_, let reason):
                deadTokens.insert(push.token)
                logger.info(
                    "token unregistered, deactivating",
                    metadata: ["push.token": "\(push.token)", "push.reason": "\(reason)"])
                let token = push.token
                try await Retry.transient("deactivate device", logger: logger) {
                    try await store.deactivateDevice(token: token)
                }
            }
        }
        return unrecorded.first
    }

    /// A push went out but its request finished only after this worker's term on the lease: it was frozen with the
    /// request on its way, and it may have reached the device after newer pushes from the partition's new owner.
    /// If the lease is still this worker's (renewed now), nobody else sent anything; if not, it records the push as
    /// sent and asks the owner, through the partition's outbox, to send the current badge after it; then it leaves
    /// the partition (`lease_lost`).
    private func afterLateSend(
        _ push: PlannedPush, outbox: OutboxPush, fence: LeaseFence, partition: Int
    )
        async throws
    {
        do {
            try await fence.prepare()
        } catch let error as StoreError where error.code == "lease_lost" {
            let planned = try await Retry.transient("refresh badge", logger: logger) { [policy] in
                try await store.refreshBadge(after: push, partition: partition, policy: policy)
            }
            logger.warning(
                "a push finished after this worker lost its partition and may have landed late; refresh left to the owner",
                metadata: [
                    "push.token": "\(push.token)", "push.badge_version": "\(push.badgeVersion)",
                    "push.refresh_planned": "\(planned)",
                ])
            try await Retry.transient("mark sent", logger: logger) { try await store.markSent([outbox.id]) }
            throw error
        }
    }
}
