import AMQPClient
import BadgeCore
import Foundation

/// Publishes a script in order at a fixed rate with publisher confirms, and survives broker restarts: whatever was
/// not confirmed when the connection went is published again, in order, on a new connection (so some events may
/// arrive twice, which idempotency absorbs).
struct FleetPublisher {
    let url: String
    let exchange: String
    let rate: Double
    let window = 200

    /// Publishes every step; returns how many publishes had to be repeated.
    func publish(_ steps: [FleetScript.Step]) async throws -> Int {
        var next = 0
        var republished = 0
        let clock = ContinuousClock()
        let start = clock.now
        while next < steps.count {
            let connection = try await AMQPConnection.connect(
                try AMQPConfiguration(url: url), retry: AMQPRetryPolicy(maxDelay: .seconds(1)))
            let channel = try await connection.openChannel()
            try await channel.confirmSelect()
            var inFlight: [(index: Int, confirmation: AMQPPublishConfirmation)] = []
            var failedAt: Int?
            func settleOldest() async {
                let entry = inFlight.removeFirst()
                do {
                    try await entry.confirmation.wait()
                } catch {
                    if failedAt == nil || entry.index < failedAt! { failedAt = entry.index }
                }
            }
            while next < steps.count, failedAt == nil, !connection.isClosed {
                let due = start + .seconds(Double(next) / rate)
                if due > clock.now { try await Task.sleep(until: due, clock: clock) }
                let event = steps[next].event
                let confirmation = channel.publishInOrder(
                    event.jsonData(), exchange: exchange, routingKey: event.recipient, mandatory: true,
                    properties: AMQPProperties(
                        contentType: "application/json", deliveryMode: .persistent, messageID: event.id,
                        type: event.type.rawValue))
                inFlight.append((next, confirmation))
                next += 1
                while inFlight.count > window || (inFlight.first?.confirmation.isResolved ?? false) {
                    await settleOldest()
                }
            }
            while !inFlight.isEmpty { await settleOldest() }
            if let failedAt {
                republished += next - failedAt
                next = failedAt
            }
            await connection.close()
        }
        return republished
    }
}
