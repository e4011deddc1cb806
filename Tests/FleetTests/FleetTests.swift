import BadgeModel
import BadgeSink
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three worker processes on PostgreSQL with a real broker and sink, a seeded random script of ~2,500 events for
/// 40 users, checked against the reference model (`InboxModel`), with and without faults.
@Suite("Worker fleets", .serialized, .timeLimit(.minutes(5)))
struct FleetTests {
    private func expectClean(
        _ report: FleetReport, allowDuplicates: Bool, _ name: String, lateZombiePushKnownIssue: Bool = false
    ) {
        print("fleet[\(name)]: \(report)")
        #expect(report.lostEffects.isEmpty, "lost: \(report.lostEffects.prefix(10))")
        if lateZombiePushKnownIssue {
            // Known issue (open in issue 4): a push already on its way when its worker was frozen reaches the sink
            // only when the worker resumes, after the new owner's newer pushes to that device. It shows as one
            // device whose last badge is an older one, or one version arriving after a higher one. The fix under
            // way: the frozen worker, on finding its lease lost, asks the partition's owner (through the outbox)
            // to send the current badge again, and owners drain their outbox when idle too.
            withKnownIssue("a push in flight when its worker froze lands after newer ones", isIntermittent: true) {
                #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
                #expect(report.orderViolations.isEmpty, "order: \(report.orderViolations.prefix(10))")
            }
        } else {
            #expect(report.badgeMismatches.isEmpty, "badges: \(report.badgeMismatches.prefix(10))")
            #expect(report.orderViolations.isEmpty, "order: \(report.orderViolations.prefix(10))")
        }
        #expect(report.deadLettered == 0)
        #expect(report.duplicatesWithNewID.isEmpty, "re-sends must keep their apns-id")
        if !allowDuplicates {
            #expect(report.duplicateAlerts == 0)
        }
        #expect(report.effectsChecked > 1000)
    }

    @Test func noFaults() async throws {
        let report = try await FleetHarness.run(seed: 11)
        expectClean(report, allowDuplicates: false, "no faults")
        // The work is spread: 8 partitions over 3 workers is 3 + 3 + 2, nobody idle, nobody holding everything.
        #expect(report.partitionsPerWorker == [2, 3, 3])
    }

    @Test func aRandomWorkerKilledEveryOneAndAHalfSeconds() async throws {
        let report = try await FleetHarness.run(seed: 12) { workers in
            var kills = 0
            let clock = ContinuousClock()
            let end = clock.now + .seconds(18)
            var rng = SeededGenerator(seed: 12)
            while clock.now < end {
                try await Task.sleep(for: .milliseconds(1500))
                let victim = workers[rng.next(workers.count)]
                victim.killHard()
                try victim.start()
                kills += 1
            }
            return kills
        }
        expectClean(report, allowDuplicates: true, "SIGKILL")
    }

    @Test func aWorkerFrozenPastTheHeartbeatTimeoutAndResumed() async throws {
        let report = try await FleetHarness.run(seed: 13) { workers in
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
        expectClean(report, allowDuplicates: true, "SIGSTOP", lateZombiePushKnownIssue: true)
    }

    @Test func theBrokerRestartedMidRun() async throws {
        let report = try await FleetHarness.run(seed: 14) { _ in
            try await Task.sleep(for: .seconds(6))
            try await FleetHarness.shell("scripts/services", ["ctl", "stop_app"])
            try await Task.sleep(for: .seconds(2))
            try await FleetHarness.shell("scripts/services", ["ctl", "start_app"])
            return 1
        }
        expectClean(report, allowDuplicates: false, "broker restart")
    }

    @Test func postgresStoppedForFiveSeconds() async throws {
        let report = try await FleetHarness.run(seed: 15) { _ in
            try await Task.sleep(for: .seconds(6))
            try await FleetHarness.shell("scripts/services", ["pg-stop"])
            try await Task.sleep(for: .seconds(5))
            try await FleetHarness.shell("scripts/services", ["pg-start"])
            return 1
        }
        expectClean(report, allowDuplicates: false, "PostgreSQL outage")
        // Workers wait and resume: none gave up and had to be restarted.
        #expect(report.workerRestarts == 0)
    }

    @Test func theSinkAnswers30PercentOfPushesWith503() async throws {
        let report = try await FleetHarness.run(
            seed: 16, sinkFault: try Fault(status: 503, reason: "ServiceUnavailable", rate: 0.3))
        expectClean(report, allowDuplicates: false, "30% 503")
    }
}
