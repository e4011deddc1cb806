import Foundation
import Testing

/// The docker compose fleet (`docker-compose.yml`, 3 workers), driven from the host by `scripts/compose-test`,
/// which starts the stack, publishes a contract scenario through `docker compose run --rm publish`, runs this
/// suite, and then stops the stack and checks how the workers exited; then it starts the fleet again on the
/// three-node broker cluster of `deploy/cluster.yml` for the cluster's test. Skipped unless that script configured
/// it.
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

    @Test(.enabled(if: !ComposeFleet.isCluster))
    func deliversEveryAlertOnceAndSurvivesAKilledWorker() async throws {
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
        // Every alert once, unless a worker stalled past its lease before the kill (seen when the rest of CI loaded
        // the machine: lease rounds 5.6 s apart): then the partition's new owner sends again what was sent but not
        // recorded, with the same `apns-id` (checked above for every re-send), as the contract allows.
        let lostBeforeKill = try await fleet.leasesLost()
        if lostBeforeKill == 0 {
            #expect(before.duplicateAlerts == 0)
        } else {
            print("compose[fleet of 3]: \(lostBeforeKill) lease(s) lost to a stall, so re-sends are allowed")
        }

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

    /// On the three-node cluster, every client given the three nodes: while events are published through the three
    /// nodes' URLs, the broker container leading the most partition queues is killed (SIGKILL). Every alert still
    /// arrives once, every device ends on its model badge, nothing is dead-lettered and no worker container exits.
    @Test(.enabled(if: ComposeFleet.isCluster))
    func aKilledBrokerContainerLosesNothing() async throws {
        let fleet = try ComposeFleet.fromEnvironment()
        let scenario = try fleet.scenarioSteps()
        let workers = try await fleet.containers(of: "worker")
        #expect(workers.count == 3)
        for service in fleet.brokerServices {
            let containers = try await fleet.containers(of: service)
            #expect(containers.count == 1, "\(service) does not run")
        }

        // The node leading the most partition queues (leaders move only when a node goes).
        let led = try await fleet.partitionQueuesLed()
        let node = try #require(led.max { $0.value < $1.value }?.key, "no partition queue has a leader: \(led)")
        let victims = try await fleet.containers(of: ComposeFleet.service(ofNode: node))
        let victim = try #require(victims.first, "no container runs \(node)")

        // About 10 s of publishing at 300 events a second through the three nodes; the kill about 3 s in.
        let script = FleetScript(seed: 303, users: 100, events: 3000, userPrefix: "compose-c")
        let times = PublishTimes()
        let clock = ContinuousClock()
        let start = clock.now
        async let republished = FleetPublisher(url: fleet.amqpURL, exchange: Self.exchange, rate: 300, times: times)
            .publish(script.steps)
        try await Task.sleep(for: .seconds(3))
        let killedAt = Date()
        let killedAfter = clock.now - start
        try await fleet.kill(victim)
        let republishedCount = try await republished
        let published = clock.now - start
        try await fleet.waitUntilQuiet(timeout: .seconds(180))
        let quiet = clock.now - start

        let deliveries = try await fleet.deliveries()
        var report = FleetReport.check(steps: scenario + script.steps, deliveries: deliveries)
        report.republished = republishedCount
        report.deadLettered = try await fleet.deadLettered()
        report.partitionsPerWorker = try await fleet.leases().values.map(\.count).sorted()
        let running = try await fleet.containers(of: "worker")
        var brokersRunning = 0
        for service in fleet.brokerServices { brokersRunning += try await fleet.containers(of: service).count }
        let ledAfter = try await fleet.partitionQueuesLed()
        print(
            "compose[cluster: killed \(node), which led \(led[node] ?? 0) of the 8 partition queues (\(led)), "
                + "\(killedAfter) into the publishing]: published in \(published), quiet after \(quiet); \(report); "
                + "pushes \(deliveries.count); worker containers running \(running.count); broker nodes running "
                + "\(brokersRunning); partition queue leaders after \(ledAfter)")
        print(
            report.timing(
                after: killedAt, window: 10, steps: script.steps, times: times,
                name: "compose[cluster: docker kill of \(node)]"))
        // By when the alert arrived as well: an event published before the kill may wait in a queue the killed node
        // led, and arrive after it.
        var slowest: [String: (count: Int, latency: TimeInterval)] = [:]
        for (index, step) in script.steps.enumerated() {
            guard let published = times[index], let arrived = report.alertArrivals[step.event.id] else { continue }
            let group =
                published >= killedAt
                ? "published after the kill"
                : arrived < killedAt ? "delivered before the kill" : "published before it, delivered after"
            let latency = arrived.timeIntervalSince(published)
            slowest[group] = ((slowest[group]?.count ?? 0) + 1, max(slowest[group]?.latency ?? 0, latency))
        }
        print(
            "compose[cluster: slowest alert (publish to push)]: "
                + slowest.sorted { $0.key < $1.key }.map {
                    String(format: "%@: %.3f seconds (%d alerts)", $0.key, $0.value.latency, $0.value.count)
                }.joined(separator: "; "))
        expectNothingLost(report)
        #expect(report.deadLettered == 0)
        #expect(running.count == 3)
        #expect(Set(running) == Set(workers))
        #expect(brokersRunning == 2)
    }
}
