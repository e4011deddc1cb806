import AMQPClient
import BadgeCore
import Foundation
import Synchronization

/// When each step of a script was first published, by its index.
final class PublishTimes: Sendable {
    private let times = Mutex<[Int: Date]>([:])

    func record(_ index: Int) {
        times.withLock { times in
            if times[index] == nil { times[index] = Date() }
        }
    }

    /// The time step `index` was first published.
    subscript(index: Int) -> Date? { times.withLock { $0[index] } }
}

/// Publishes a script in order at a fixed rate with publisher confirms, and survives broker restarts and a
/// cluster node's loss: whatever was not confirmed when the connection went (or was refused) is published again,
/// in order, on a new connection at the next node (so some events may arrive twice, which idempotency absorbs).
/// A connection whose oldest unconfirmed event waits ``stall`` is given up the same way.
struct FleetPublisher {
    let url: String
    let exchange: String
    let rate: Double
    var times: PublishTimes? = nil
    let window = 200
    /// How long the oldest unconfirmed event may wait before its connection is given up.
    static let stall: Duration = .seconds(10)

    /// Publishes every step; returns how many publishes had to be repeated.
    func publish(_ steps: [FleetScript.Step]) async throws -> Int {
        var next = 0
        var republished = 0
        let clock = ContinuousClock()
        let start = clock.now
        let nodes = AMQPNodeRotation(try AMQPConfiguration(url: url))
        var refusals = 0
        while next < steps.count {
            let connection = try await nodes.connect(
                retry: AMQPRetryPolicy(maxDelay: .seconds(1)), logger: .init(label: "fleet-publisher"))
            let channel: AMQPChannel
            do {
                channel = try await connection.openChannel()
                try await channel.confirmSelect()
            } catch {
                await connection.close()
                continue
            }
            var inFlight: [(index: Int, confirmation: AMQPPublishConfirmation, sentAt: ContinuousClock.Instant)] = []
            var failedAt: Int?
            var refused = false
            func settleOldest() async {
                let entry = inFlight.removeFirst()
                let stalled = await Self.waitForConfirm(
                    entry.confirmation, deadline: entry.sentAt + Self.stall, connection: connection)
                do {
                    try await entry.confirmation.wait()
                    if !stalled { refusals = 0 }
                } catch {
                    if let error = error as? AMQPError, error.code == .publishNacked { refused = true }
                    if failedAt == nil || entry.index < failedAt! { failedAt = entry.index }
                }
            }
            while next < steps.count, failedAt == nil, !connection.isClosed {
                let due = start + .seconds(Double(next) / rate)
                if due > clock.now { try await Task.sleep(until: due, clock: clock) }
                let event = steps[next].event
                times?.record(next)
                let confirmation = channel.publishInOrder(
                    event.jsonData(), exchange: exchange, routingKey: event.recipient, mandatory: true,
                    properties: AMQPProperties(
                        contentType: "application/json", deliveryMode: .persistent, messageID: event.id,
                        type: event.type.rawValue))
                inFlight.append((next, confirmation, clock.now))
                next += 1
                while inFlight.count > window || (inFlight.first?.confirmation.isResolved ?? false)
                    || (inFlight.first.map { clock.now - $0.sentAt > Self.stall } ?? false)
                {
                    await settleOldest()
                }
            }
            while !inFlight.isEmpty { await settleOldest() }
            if let failedAt {
                republished += next - failedAt
                next = failedAt
            }
            await connection.close()
            if refused {
                // A refusal (a queue without a majority, for a while): back off, 100 ms doubling to 2 s.
                refusals += 1
                try await Task.sleep(for: .milliseconds(min(2000, 100 << min(refusals - 1, 5))))
            }
        }
        return republished
    }

    /// Waits for `confirmation` until `deadline`; past it closes `connection` (which fails what it did not
    /// confirm) and returns true.
    static func waitForConfirm(
        _ confirmation: AMQPPublishConfirmation, deadline: ContinuousClock.Instant, connection: AMQPConnection
    ) async -> Bool {
        if confirmation.isResolved { return false }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await confirmation.wait()
                return false
            }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: ContinuousClock())
                guard !Task.isCancelled else { return false }
                await connection.close()
                return true
            }
            let first = await group.next() ?? false
            group.cancelAll()
            await group.waitForAll()
            return first
        }
    }
}
