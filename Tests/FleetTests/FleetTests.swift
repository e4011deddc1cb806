import BadgeCore
import BadgeModel
import BadgeSink
import BadgeSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three worker processes on PostgreSQL with a real broker and sink, a seeded random script of ~2,500 events for
/// 40 users, checked against the reference model (`InboxModel`), with and without faults.
@Suite("Worker fleets", .serialized, .timeLimit(.minutes(5)))
struct FleetTests {
    /// The checks every run shares. `selfRestartsAllowed` only for the SIGKILL run, where the supervisor may notice
    /// a killed worker before the test starts it again.
    static func expectClean(
        _ report: FleetReport, allowDuplicates: Bool, _ name: String, selfRestartsAllowed: Bool = false
    ) {
        print("fleet[\(name)]: \(report)")
        if !selfRestartsAllowed {
            // No worker exited on its own (a crash, or the watchdog): see the worker logs the run keeps.
            #expect(report.workerRestarts == 0)
        }
        #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
        #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
        #expect(report.orderViolations.isEmpty, "order: \(report.orderViolations.prefix(10))")
        #expect(report.deadLettered == 0)
        #expect(report.duplicatesWithNewID.isEmpty, "re-sends must keep their apns-id")
        if !allowDuplicates {
            #expect(report.duplicateAlerts == 0)
        }
        #expect(report.effectsChecked > 1000)
        #expect(report.alertEventsLeft == 0, "every alert's event went with its last outbox row")
    }

    @Test func noFaults() async throws {
        let report = try await FleetHarness.run(seed: 11)
        Self.expectClean(report, allowDuplicates: false, "no faults")
        // The work is spread: 8 partitions over 3 workers is 3 + 3 + 2, nobody idle, nobody holding everything.
        #expect(report.partitionsPerWorker == [2, 3, 3])
    }

    @Test func aRandomWorkerKilledEveryOneAndAHalfSeconds() async throws {
        let report = try await FleetHarness.run(seed: 12) { run in
            let workers = run.workers
            var kills = 0
            let clock = ContinuousClock()
            let end = clock.now + .seconds(18)
            var rng = SeededGenerator(seed: 12)
            while clock.now < end {
                try await Task.sleep(for: .milliseconds(1500))
                let victim = workers[rng.next(workers.count)]
                try victim.killHardAndRestart()
                kills += 1
            }
            return kills
        }
        Self.expectClean(report, allowDuplicates: true, "SIGKILL", selfRestartsAllowed: true)
    }

    @Test func aWorkerFrozenPastTheHeartbeatTimeoutAndResumed() async throws {
        let report = try await FleetHarness.run(seed: 13) { run in
            let workers = run.workers
            try await Task.sleep(for: .seconds(4))
            workers[0].signal(SIGSTOP)
            try await Task.sleep(for: .seconds(9))
            workers[0].signal(SIGCONT)
            try await Task.sleep(for: .seconds(2))
            workers[1].signal(SIGSTOP)
            try await Task.sleep(for: .seconds(9))
            workers[1].signal(SIGCONT)
            return 2
        }
        Self.expectClean(report, allowDuplicates: true, "SIGSTOP")
    }

    @Test func theBrokerRestartedMidRun() async throws {
        let report = try await FleetHarness.run(seed: 14) { _ in
            try await Task.sleep(for: .seconds(6))
            try await FleetHarness.rabbitmqctl("stop_app")
            try await Task.sleep(for: .seconds(2))
            try await FleetHarness.rabbitmqctl("start_app")
            return 1
        }
        Self.expectClean(report, allowDuplicates: false, "broker restart")
    }

    @Test func postgresStoppedForFiveSeconds() async throws {
        let report = try await FleetHarness.run(seed: 15) { _ in
            try await Task.sleep(for: .seconds(6))
            try await FleetHarness.shell("scripts/services", ["pg-stop"])
            try await Task.sleep(for: .seconds(5))
            try await FleetHarness.shell("scripts/services", ["pg-start"])
            return 1
        }
        // Workers wait and resume: none gave up and had to be restarted (checked in expectClean).
        Self.expectClean(report, allowDuplicates: false, "PostgreSQL outage")
    }

    @Test func theSinkAnswers30PercentOfPushesWith503() async throws {
        let report = try await FleetHarness.run(
            seed: 16, sinkFault: try Fault(status: 503, reason: "ServiceUnavailable", rate: 0.3))
        Self.expectClean(report, allowDuplicates: false, "30% 503")
    }

    /// One clock: the first worker's wall clock is 10 minutes ahead of the others' and the database's (then 10
    /// minutes behind), while the sink answers 30 % of pushes with 503 and partitions move between it and the
    /// others mid-run (it is restarted, then another worker, then it again), so that pushes one worker scheduled for
    /// a retry are claimed by another. Nothing may change: every alert once and in order, nothing dead-lettered or
    /// given up, no worker exit, and no retry waiting longer than the schedule's 30 s ceiling and a lease handover
    /// (with the workers' own clocks, a retry scheduled by a clock 10 minutes ahead waited 10 minutes for the
    /// others, and one scheduled by the others waited as long for a clock 10 minutes behind).
    @Test(arguments: ["+10m", "-10m"])
    func aWorkerWhoseClockIsTenMinutesOff(offset: String) async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/faketime"),
            "libfaketime is missing: apt-get install faketime")
        let expected: Double = offset.hasPrefix("-") ? -600 : 600
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fake-clock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let wrapper = try await FakeClock.wrapper(offset, building: directory)
        let report = try await FleetHarness.run(
            seed: 18, sinkFault: try Fault(status: 503, reason: "ServiceUnavailable", rate: 0.3),
            wrappers: [0: wrapper]
        ) { run in
            let skewed = run.workers[0]
            // The clock really is off: the worker's own log says so.
            let measured = try #require(skewed.loggedClockOffset())
            #expect(abs(measured - expected) < 30, "the worker's clock is \(measured) s off, not \(expected) s")
            try await Task.sleep(for: .seconds(5))
            try await skewed.restartGracefully()
            try await Task.sleep(for: .seconds(4))
            try await run.workers[1].restartGracefully()
            try await Task.sleep(for: .seconds(4))
            try await skewed.restartGracefully()
            return 3
        }
        Self.expectClean(report, allowDuplicates: false, "clock \(offset), 30% 503")
        #expect(report.refusedAttempts > 100)
        #expect(report.longestRetryWait < .seconds(45))
    }
}
