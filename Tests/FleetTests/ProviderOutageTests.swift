import BadgeModel
import BadgeSink
import Foundation
import Testing

/// A provider that is down for minutes holds up nothing: ingestion goes on, every push waits in the outbox with its
/// own retry schedule, no worker exits, and after the outage every alert arrives once with the right badges.
@Suite("Provider outage", .serialized, .timeLimit(.minutes(12)))
struct ProviderOutageTests {
    @Test func theSinkAnswers503ToEverythingForThreeMinutesWhileEventsKeepFlowing() async throws {
        // About 2,500 events at 16 per second: the publisher is done well before the outage ends (its every push
        // retried for three minutes, past the 30 s ceiling of its backoff).
        let report = try await FleetHarness.run(seed: 17, rate: 16, sinkOutage: .seconds(180))
        print("fleet[sink down 3 min]: \(report)")
        // Every event was written while the provider was down: nothing waited in the broker.
        #expect(report.queuedAtOutageEnd == 0)
        let distinctEvents = Set(FleetScript(seed: 17).steps.map(\.event.id)).count
        #expect(report.processedAtOutageEnd == distinctEvents)
        // The outbox's gauges kept being sampled through the outage (every 5 s): what they last reported is the
        // outbox the database holds (nothing planned or sent meanwhile), and its oldest push's age counts the
        // outage (its first pushes were planned in the run's first seconds).
        let outbox = try #require(report.outboxAtOutageEnd)
        #expect(outbox.rows > 1000)
        #expect(abs(outbox.reportedDepth - Double(outbox.rows)) <= Double(outbox.rows) * 0.1, "\(outbox)")
        #expect(outbox.reportedOldestAge >= 150 && outbox.reportedOldestAge <= 200, "\(outbox)")
        // No worker exited (the watchdog guards our own hangs, never a provider's).
        #expect(report.workerRestarts == 0)
        #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
        #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
        #expect(report.orderViolations.isEmpty, "order: \(report.orderViolations.prefix(10))")
        #expect(report.duplicateAlerts == 0)
        #expect(report.deadLettered == 0)
        #expect(report.effectsChecked > 1000)
    }
}
