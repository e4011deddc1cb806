import Foundation
import Testing

/// The docker compose fleet (`docker-compose.yml`, 3 workers), driven from the host by `scripts/compose-test`,
/// which starts the stack, publishes a contract scenario through `docker compose run --rm publish`, runs this
/// suite, and then stops the stack and checks how the workers exited. Skipped unless that script configured it.
@Suite("Compose fleet", .serialized, .enabled(if: ComposeFleet.isConfigured), .timeLimit(.minutes(10)))
struct ComposeFleetTests {
    private static let exchange = "badgepipe.events"

    private func expectNothingLost(_ report: FleetReport) {
        #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
        #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
        #expect(report.orderViolations.isEmpty, "order: \(report.orderViolations.prefix(10))")
        #expect(report.duplicatesWithNewID.isEmpty, "re-sends must keep their apns-id")
        #expect(report.effectsChecked > 1000)
    }

    @Test func deliversEveryAlertOnceAndSurvivesAKilledWorker() async throws {
        let fleet = try ComposeFleet.fromEnvironment()
        let clock = ContinuousClock()
        let scenario = try fleet.scenarioSteps()

        // 1. A few thousand generated events into the running fleet; with the scenario, every alert once and
        //    every device on its model badge.
        let first = FleetScript(seed: 301, users: 100, events: 3000, userPrefix: "compose-a")
        var start = clock.now
        _ = try await FleetPublisher(url: fleet.amqpURL, exchange: Self.exchange, rate: 1000).publish(first.steps)
        try await fleet.waitUntilQuiet(timeout: .seconds(180))
        var deliveries = try await fleet.deliveries()
        var before = FleetReport.check(steps: scenario + first.steps, deliveries: deliveries)
        before.partitionsPerWorker = try await fleet.leases().values.map(\.count).sorted()
        print("compose[fleet of 3]: \(before); pushes \(deliveries.count); published and quiet in \(clock.now - start)")
        expectNothingLost(before)
        #expect(before.duplicateAlerts == 0)

        // 2. Kill one worker container; its partitions go to the two survivors while more events arrive.
        let workers = try await fleet.containers(of: "worker")
        #expect(workers.count == 3)
        #expect(before.partitionsPerWorker == [2, 3, 3])
        var leases = try await fleet.leases()
        // A worker's id is "<hostname>-<pid>", and a container's hostname is the first 12 characters of its id.
        let victim = try #require(workers.first)
        let victimPrefix = String(victim.prefix(12)) + "-"
        let victimPartitions = leases.filter { $0.key.hasPrefix(victimPrefix) }.flatMap(\.value).sorted()
        #expect(!victimPartitions.isEmpty, "the victim \(victimPrefix) holds no partition: \(leases)")

        let second = FleetScript(seed: 302, users: 100, events: 3000, userPrefix: "compose-b")
        start = clock.now
        try await fleet.kill(victim)
        async let republished = FleetPublisher(url: fleet.amqpURL, exchange: Self.exchange, rate: 1000)
            .publish(second.steps)
        var failover: Duration?
        while failover == nil, clock.now - start < .seconds(60) {
            leases = try await fleet.leases()
            let survivors = leases.filter { !$0.key.hasPrefix(victimPrefix) }
            if Set(survivors.flatMap(\.value)).count == 8 {
                failover = clock.now - start
            } else {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let republishedCount = try await republished
        try await fleet.waitUntilQuiet(timeout: .seconds(180))
        let quietAfter = clock.now - start
        let survivors = try await fleet.containers(of: "worker")
        leases = try await fleet.leases()
        deliveries = try await fleet.deliveries()
        var after = FleetReport.check(steps: scenario + first.steps + second.steps, deliveries: deliveries)
        after.republished = republishedCount
        after.partitionsPerWorker = leases.values.map(\.count).sorted()
        print(
            "compose[killed \(victimPrefix.dropLast()), which held partitions \(victimPartitions)]: "
                + "failover \(failover.map { "\($0)" } ?? "none within 60 s"), quiet after \(quietAfter); "
                + "\(after); pushes \(deliveries.count); worker containers running \(survivors.count)")
        #expect(failover != nil, "the survivors did not take every partition")
        // `restart: unless-stopped` does not restart a container that `docker kill` stopped: two remain.
        #expect(survivors.count == 2)
        #expect(survivors.allSatisfy { $0 != victim })
        #expect(after.partitionsPerWorker == [4, 4], "leases \(leases)")
        expectNothingLost(after)
    }
}
