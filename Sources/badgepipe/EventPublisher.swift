import AMQPClient
import BadgeSupport
import BadgeWorker
import Foundation
import Logging

/// Publishes events in order with a window of unconfirmed messages, optionally at a fixed rate, with a live
/// progress line on stderr, and sends again what the broker did not confirm.
///
/// An event is done when the broker confirms it (`basic.ack`), or fails for good when the broker returns it as
/// unroutable. Anything else is sent again, in the order it was first sent (a duplicate is the contract's idempotent
/// case):
/// - the connection was lost (its node may be gone): everything it did not confirm is sent on a new connection,
///   at the next node of the list (``AMQPNodeRotation``);
/// - the broker refused an event (`basic.nack`, for example a queue at its length limit, or a quorum queue without a
///   majority): the connection is given up and the events are sent on a new one after a wait that starts at
///   ``refusalBackoff``'s 100 ms and doubles to 2 s (after a cluster node's loss, a channel that refused once
///   can go on refusing where a new connection is served at once);
/// - the oldest event waited ``stall`` for its confirm: the connection is given up as above (a connection can stay
///   open with neither confirm nor refusal after a node's loss).
///
/// Publishing gives up after ``patience`` without any confirm: the events left are reported not confirmed.
struct EventPublisher {
    struct Report {
        var sent = 0
        var confirmed = 0
        /// Events published again after a lost connection, a refusal or a stall (each time they were).
        var sentAgain = 0
        var failures: [String] = []
        var seconds = 0.0

        var summary: String {
            let rate = seconds > 0 ? Double(confirmed) / seconds : 0
            var line = String(
                format: "published %d events: %d confirmed, %d not confirmed, in %.2f s (%.0f/s)", sent, confirmed,
                failures.count, seconds, rate)
            if sentAgain > 0 { line += " (\(sentAgain) sent again after a lost connection or a refusal)" }
            return line
        }
    }

    /// The shortest sleep between two sends of a paced load: everything due is sent together, at most every 2 ms.
    ///
    /// Sending what is due every 2 ms rather than waking once per message costs the publisher and the broker less
    /// CPU (docs/performance.md has the figures). Each event's `occurred_at` is still stamped right before
    /// it is sent; below 500 events/s every event still goes out at its own time.
    static let pacingQuantum: Duration = .milliseconds(2)
    /// How long the oldest unconfirmed event may wait for its confirm before its connection is given up.
    static let stall: Duration = .seconds(10)
    /// How long publishing goes on without any confirm before it gives up.
    static let patience: Duration = .seconds(60)
    /// The wait before sending refused events again.
    static let refusalBackoff = Backoff.publishRefused

    /// What becomes of an event whose confirm did not come.
    enum Outcome: Equatable {
        /// Send it again; after a refusal (`afresh`) on a new connection after a backoff, otherwise at once on the
        /// next node.
        case sendAgain(afresh: Bool)
        /// It cannot succeed (the broker returned it as unroutable, or refused the arguments).
        case failed
    }

    /// The one rule for what may be sent again: everything but an unroutable return or a client-side refusal.
    static func outcome(of error: any Error) -> Outcome {
        guard let error = error as? AMQPError else { return .failed }
        switch error.code {
        case .publishNacked: return .sendAgain(afresh: true)
        case .publishReturned, .invalidArgument: return .failed
        default: return .sendAgain(afresh: false)
        }
    }

    /// The broker's nodes: each new connection starts at the node after the last one's.
    let nodes: AMQPNodeRotation
    let window: Int
    /// The events exchange to publish to (`badgepipe.events`, or another namespace's).
    let exchange: String
    let logger: Logger

    private struct Item {
        var event: OutgoingEvent
    }

    private struct InFlight {
        var item: Item
        var confirmation: AMQPPublishConfirmation
        var sentAt: ContinuousClock.Instant
    }

    private struct Link {
        var connection: AMQPConnection
        var channel: AMQPChannel
    }

    func publish(
        count: Int,
        rate: Double?,
        progress: Bool,
        next: () -> OutgoingEvent
    ) async throws -> Report {
        var report = Report()
        let clock = ContinuousClock()
        let start = clock.now
        var lastProgress = start
        var lastConfirm = start
        var inFlight: [InFlight] = []
        inFlight.reserveCapacity(window)
        var head = 0
        /// Events to send again, in their first order, before any new one.
        var again: [Item] = []
        var againHead = 0
        var generated = 0
        var refusalsInARow = 0
        var link: Link?

        func result(of confirmation: AMQPPublishConfirmation) async -> (any Error)? {
            do {
                try await confirmation.wait()
                return nil
            } catch {
                return error
            }
        }

        while generated < count || againHead < again.count || head < inFlight.count {
            if link == nil {
                link = try await open(giveUpAt: lastConfirm + Self.patience, retrying: generated > 0)
                if link == nil {
                    // No node answered for `patience`: what is left is reported, not confirmed.
                    for entry in inFlight[head...] { report.failures.append("\(entry.item.event.id): no broker") }
                    for item in again[againHead...] { report.failures.append("\(item.event.id): no broker") }
                    break
                }
            }
            guard let open = link else { break }
            // Send while the window has room.
            while inFlight.count - head < window {
                let item: Item
                if againHead < again.count {
                    item = again[againHead]
                    againHead += 1
                } else if generated < count {
                    if let rate, rate > 0 {
                        let due = start + .seconds(Double(generated) / rate)
                        let now = clock.now
                        if due > now { try await Task.sleep(until: max(due, now + Self.pacingQuantum), clock: clock) }
                    }
                    item = Item(event: next())
                    generated += 1
                    report.sent += 1
                } else {
                    break
                }
                let confirmation = open.channel.publishInOrder(
                    item.event.body, exchange: exchange, routingKey: item.event.recipient, mandatory: true,
                    properties: AMQPProperties(
                        contentType: "application/json", deliveryMode: .persistent, messageID: item.event.id,
                        type: item.event.type.isEmpty ? nil : item.event.type))
                inFlight.append(InFlight(item: item, confirmation: confirmation, sentAt: clock.now))
                // A paced load settles what is answered between sends.
                if rate != nil,
                    inFlight[head].confirmation.isResolved || clock.now - inFlight[head].sentAt > Self.stall
                {
                    break
                }
            }
            if againHead == again.count {
                again.removeAll(keepingCapacity: true)
                againHead = 0
            }
            if progress, clock.now - lastProgress > .milliseconds(500) {
                lastProgress = clock.now
                printProgress(report, elapsed: clock.now - start)
            }
            guard head < inFlight.count else { continue }
            let moreToSend = generated < count || againHead < again.count
            if moreToSend, inFlight.count - head < window, !inFlight[head].confirmation.isResolved,
                clock.now - inFlight[head].sentAt < Self.stall
            {
                continue
            }

            let entry = inFlight[head]
            let stalled = await waitForConfirm(entry, on: open.connection, deadline: entry.sentAt + Self.stall)
            let error = await result(of: entry.confirmation)
            if error == nil {
                report.confirmed += 1
                lastConfirm = clock.now
                refusalsInARow = 0
                head += 1
            } else if let error, !stalled, Self.outcome(of: error) == .failed {
                report.failures.append("\(entry.item.event.id): \(error)")
                head += 1
            } else {
                // The connection is given up: what it confirmed counts, the rest is sent again.
                let refused = !stalled && error.map { Self.outcome(of: $0) == .sendAgain(afresh: true) } == true
                let reason = stalled ? "no confirm for \(Self.stall)" : "\(error.map { "\($0)" } ?? "")"
                await open.connection.close()
                link = nil
                var resend: [Item] = []
                for entry in inFlight[head...] {
                    if let error = await result(of: entry.confirmation) {
                        if !stalled, Self.outcome(of: error) == .failed {
                            report.failures.append("\(entry.item.event.id): \(error)")
                        } else {
                            resend.append(entry.item)
                        }
                    } else {
                        report.confirmed += 1
                        lastConfirm = clock.now
                    }
                }
                inFlight.removeAll(keepingCapacity: true)
                head = 0
                again = resend + again[againHead...]
                againHead = 0
                report.sentAgain += resend.count
                logger.warning(
                    "sending unconfirmed events again on a new connection",
                    metadata: [
                        "amqp.node": "\(open.connection.node)", "publish.events": "\(resend.count)",
                        "publish.reason": "\(refused ? "refused: " : "")\(reason)",
                    ])
                if refused {
                    refusalsInARow += 1
                    try await Task.sleep(for: Self.refusalBackoff.delay(attempt: refusalsInARow, unit: 1))
                }
                if clock.now - lastConfirm > Self.patience {
                    for item in again[againHead...] {
                        report.failures.append("\(item.event.id): no confirm for \(Self.patience)")
                    }
                    again = []
                    againHead = 0
                    break
                }
            }
            if head > 4096 {
                inFlight.removeFirst(head)
                head = 0
            }
        }
        await link?.connection.close()
        let elapsed = clock.now - start
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if progress {
            printProgress(report, elapsed: elapsed)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        if report.sent < count {
            report.failures.append("\(count - report.sent) events not sent: publishing gave up")
        }
        return report
    }

    /// Waits for the confirm of `entry` until `deadline`; past it, closes the connection (which fails everything it
    /// did not confirm) and returns true.
    private func waitForConfirm(
        _ entry: InFlight, on connection: AMQPConnection, deadline: ContinuousClock.Instant
    ) async -> Bool {
        if entry.confirmation.isResolved { return false }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await entry.confirmation.wait()
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

    /// A connection and a confirming channel to the next node that answers, retrying while none does until
    /// `giveUpAt` (nil past it) when `retrying`; the first connection is not retried, so that a wrong URL or a
    /// broker that is not running fails at once.
    private func open(giveUpAt: ContinuousClock.Instant, retrying: Bool) async throws -> Link? {
        let policy = AMQPRetryPolicy()
        var attempt = 0
        while true {
            attempt += 1
            do {
                let connection = try await nodes.connect(logger: logger)
                do {
                    let channel = try await connection.openChannel()
                    do {
                        try await channel.declareExchange(exchange, type: .modulusHash, passive: true)
                    } catch let error as AMQPError where error.replyCode == 404 {
                        await connection.close()
                        throw CommandError(
                            code: .noExchange,
                            message: "exchange \(exchange) does not exist: run `badgepipe setup` or start a worker")
                    }
                    try await channel.confirmSelect()
                    return Link(connection: connection, channel: channel)
                } catch let error as AMQPError where error.isUnreachable {
                    await connection.close()
                    throw error
                }
            } catch let error as AMQPError where error.isUnreachable && retrying {
                let delay = policy.delay(afterAttempt: attempt)
                guard ContinuousClock().now + delay < giveUpAt else {
                    logger.error("no broker node answered", metadata: ["amqp.error.message": "\(error.message)"])
                    return nil
                }
                try await Task.sleep(for: delay)
            }
        }
    }

    private func printProgress(_ report: Report, elapsed: Duration) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = seconds > 0 ? Double(report.confirmed) / seconds : 0
        let line = String(
            format: "\rsent %d  confirmed %d  failed %d  %.0f/s   ", report.sent, report.confirmed,
            report.failures.count, rate)
        FileHandle.standardError.write(Data(line.utf8))
    }
}
