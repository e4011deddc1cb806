import AMQPClient
import BadgeWorker
import Foundation

/// Publishes events in order with a window of unconfirmed messages, optionally at a fixed rate, with a live
/// progress line on stderr.
struct EventPublisher {
    struct Report {
        var sent = 0
        var confirmed = 0
        var failures: [String] = []
        var seconds = 0.0

        var summary: String {
            let rate = seconds > 0 ? Double(confirmed) / seconds : 0
            return String(
                format: "published %d events: %d confirmed, %d not confirmed, in %.2f s (%.0f/s)", sent, confirmed,
                failures.count, seconds, rate)
        }
    }

    /// The shortest sleep between two sends of a paced load: everything due is sent together, at most every 2 ms.
    ///
    /// Paced one message at a time, the publisher woke once per message (2,000 timer wake-ups a second at
    /// `--rate 2000`), and its connection thread and the broker woke with it: on the 2-core benchmark machine the
    /// publisher took 0.16 cores and RabbitMQ 0.41, of two cores that the workers and PostgreSQL share with them.
    /// Sending what is due every 2 ms took that to 0.08 and 0.35 cores, and the pipeline's p99 at 2,000 events/s
    /// from 123–205 ms to 80–111 ms (alternating runs; 1 ms was in between, 5 ms no better than 2). The rate is
    /// unchanged and each event's `occurred_at` is still stamped right before it is sent; bursts of about four
    /// events every 2 ms are no burstier than producers sending independently (a Poisson stream at that rate has
    /// four events in an average 2 ms). Below 500 events/s every event still goes out at its own time.
    static let pacingQuantum: Duration = .milliseconds(2)

    let channel: AMQPChannel
    let window: Int
    /// The events exchange to publish to (`badgepipe.events`, or another namespace's).
    let exchange: String

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
        var inFlight: [(id: String, confirmation: AMQPPublishConfirmation)] = []
        inFlight.reserveCapacity(window)
        var head = 0

        func settle(_ entry: (id: String, confirmation: AMQPPublishConfirmation), into report: inout Report) async {
            do {
                try await entry.confirmation.wait()
                report.confirmed += 1
            } catch {
                report.failures.append("\(entry.id): \(error)")
            }
        }

        for index in 0..<count {
            if let rate, rate > 0 {
                let due = start + .seconds(Double(index) / rate)
                let now = clock.now
                if due > now { try await Task.sleep(until: max(due, now + Self.pacingQuantum), clock: clock) }
            }
            let event = next()
            let confirmation = channel.publishInOrder(
                event.body, exchange: exchange, routingKey: event.recipient, mandatory: true,
                properties: AMQPProperties(
                    contentType: "application/json", deliveryMode: .persistent, messageID: event.id,
                    type: event.type.isEmpty ? nil : event.type))
            inFlight.append((event.id, confirmation))
            report.sent += 1
            while inFlight.count - head >= window || (head < inFlight.count && inFlight[head].confirmation.isResolved) {
                await settle(inFlight[head], into: &report)
                head += 1
            }
            if head > 4096 {
                inFlight.removeFirst(head)
                head = 0
            }
            if progress, clock.now - lastProgress > .milliseconds(500) {
                lastProgress = clock.now
                printProgress(report, elapsed: clock.now - start)
            }
        }
        while head < inFlight.count {
            await settle(inFlight[head], into: &report)
            head += 1
        }
        let elapsed = clock.now - start
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if progress {
            printProgress(report, elapsed: elapsed)
            FileHandle.standardError.write(Data("\n".utf8))
        }
        return report
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
