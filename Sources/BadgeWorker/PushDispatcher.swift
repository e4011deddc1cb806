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
    let logger: Logger

    /// Sends everything the outbox still holds (of one partition, or all): what a previous run or a previous owner
    /// of the partition committed but did not get to send.
    func drainOutbox(partition: Int?) async throws {
        while true {
            let pending = try await Retry.transient("read outbox", logger: logger) {
                try await store.pendingPushes(limit: 1000, partition: partition)
            }
            if pending.isEmpty { return }
            logger.debug("sending outbox pushes", metadata: ["worker.pushes": "\(pending.count)"])
            try await send(pending)
        }
    }

    /// Sends pushes and marks them sent.
    func send(_ pushes: [OutboxPush]) async throws {
        var byUser: [String: [OutboxPush]] = [:]
        var order: [String] = []
        for push in pushes {
            if byUser[push.push.recipient] == nil { order.append(push.push.recipient) }
            byUser[push.push.recipient, default: []].append(push)
        }
        let done = try await withThrowingTaskGroup(of: [Int64].self) { group in
            var next = 0
            var finished: [Int64] = []
            func startNext() {
                guard next < order.count, let queue = byUser[order[next]] else { return }
                next += 1
                group.addTask { try await sendInOrder(queue) }
            }
            for _ in 0..<min(concurrency, order.count) { startNext() }
            while let ids = try await group.next() {
                finished.append(contentsOf: ids)
                startNext()
            }
            return finished
        }
        try await Retry.transient("mark sent", logger: logger) { try await store.markSent(done) }
    }

    private func sendInOrder(_ pushes: [OutboxPush]) async throws -> [Int64] {
        var done: [Int64] = []
        var deadTokens: Set<String> = []
        for outbox in pushes {
            done.append(outbox.id)
            if deadTokens.contains(outbox.push.token) { continue }
            // The database-side guard: never push an older badge_version to a device than one already pushed there
            // (a worker that stalled past failover wakes up with stale pushes; they are dropped here).
            let token = outbox.push.token
            let user = outbox.push.recipient
            let version = outbox.push.badgeVersion
            let current = try await Retry.transient("claim push", logger: logger) {
                try await store.claimPush(token: token, user: user, badgeVersion: version)
            }
            if !current {
                logger.info(
                    "stale push dropped", metadata: ["push.token": "\(token)", "push.badge_version": "\(version)"])
                continue
            }
            let request = builder.build(outbox.push)
            switch try await sender.send(request) {
            case .accepted, .rejected:
                break
            case .deadToken(_, let reason):
                deadTokens.insert(outbox.push.token)
                logger.info(
                    "token unregistered, deactivating",
                    metadata: ["push.token": "\(outbox.push.token)", "push.reason": "\(reason)"])
                let token = outbox.push.token
                try await Retry.transient("deactivate device", logger: logger) {
                    try await store.deactivateDevice(token: token)
                }
            }
        }
        return done
    }
}
