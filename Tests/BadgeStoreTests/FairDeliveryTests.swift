import BadgeCore
import BadgeSupport
import BadgeWire
import Foundation
import Testing

@_spi(Testing) @testable import BadgeStore

/// Fair delivery: a claim takes at most `ClaimedPushes.perDeviceLimit` pushes of one device, its oldest, so that a
/// device with a long backlog holds back the other devices of its partition by one claim at most, while its own
/// pushes still go out in order over the following claims.
@Suite("Fair delivery")
struct FairDeliveryTests {
    static let heavyBacklog = 5_000

    /// A device with 5,000 queued pushes and, queued after them, one push to another device of the same partition:
    /// the neighbour's push is in the first claim, beside the oldest pushes of the heavy device; the heavy device's
    /// pushes are all claimed over the following claims, in id order, none twice, each claim reaching its bound
    /// (so the delivery loop claims again at once). Under a lease (on PostgreSQL the one-statement claim) and
    /// without one.
    @Test(arguments: Backend.allCases, [false, true])
    func aLongBacklogOfOneDeviceHoldsBackItsNeighbourOneClaimAtMost(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let lease = leased ? try await onlyLease(of: store) : nil
            let context = ApplyContext(partition: 0, lease: lease)
            @Sendable func claim(recording: DeliveryRecord) async throws -> ClaimedPushes {
                try await claimPartitionZero(store, lease: lease, limit: 256, recording: recording)
            }
            _ = try await store.apply(
                [register("d-heavy", token: tokenA, for: "u-heavy"), register("d-next", token: tokenB, for: "u-next")],
                policy: .unseen, context: context)
            let registrations = try await claim(recording: DeliveryRecord())
            #expect(registrations.pushes.count == 2)
            var recording = DeliveryRecord.sentAll(registrations)

            for start in stride(from: 0, to: Self.heavyBacklog, by: 500) {
                let events = (start..<start + 500).map { follow("h\($0)", at: Int64($0 + 1), to: "u-heavy") }
                _ = try await store.apply(events, policy: .unseen, context: context)
            }
            _ = try await store.apply(
                [follow("n0", at: Int64(Self.heavyBacklog + 1), to: "u-next")], policy: .unseen, context: context)

            let bound = ClaimedPushes.perDeviceLimit
            let clock = ContinuousClock()
            let started = clock.now
            let first = try await claim(recording: recording)
            let firstClaim = clock.now - started
            #expect(first.pushes.filter { $0.push.token == tokenB }.map(\.push.eventID) == ["n0"])
            #expect(first.pushes.filter { $0.push.token == tokenA }.map(\.push.eventID) == (0..<bound).map { "h\($0)" })
            #expect(first.reachedLimit)

            var heavy = first.pushes.filter { $0.push.token == tokenA }
            recording = .sentAll(first)
            var claims = 1
            while true {
                let next = try await claim(recording: recording)
                claims += 1
                #expect(next.pushes.allSatisfy { $0.push.token == tokenA })
                #expect(next.pushes.count <= bound)
                // A claim that took a full share of the device says more may be due.
                if next.pushes.count == bound { #expect(next.reachedLimit) }
                heavy += next.pushes
                recording = .sentAll(next)
                if next.pushes.isEmpty && !next.reachedLimit { break }
                try #require(claims <= Self.heavyBacklog / bound + 3, "the backlog does not drain")
            }
            #expect(heavy.map(\.push.eventID) == (0..<Self.heavyBacklog).map { "h\($0)" })
            #expect(heavy.map(\.outbox.id) == heavy.map(\.outbox.id).sorted())
            #expect(Set(heavy.map(\.outbox.id)).count == Self.heavyBacklog)
            #expect(claims == (Self.heavyBacklog + bound - 1) / bound + 1)
            let drain = clock.now - started
            print(
                "fair claim [\(backend)\(leased ? ", leased" : "")]: first claim over \(Self.heavyBacklog) queued "
                    + "\(firstClaim.wholeMicroseconds / 1000) ms; \(claims) claims in \(drain.wholeMicroseconds / 1000) ms"
            )
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    /// 25,000 devices of one partition waiting for a retry (an FCM outage, one app's revoked key), all of them
    /// sorting before one fresh device: the fresh device's push goes in the next claim. (The claim walked queued
    /// devices in token order, at most `claimHorizon` of them, counting the waiting ones: past 20,000 waiting
    /// devices, every device after them got nothing until they gave up.)
    @Test(arguments: Backend.allCases, [false, true])
    func devicesWaitingForARetryDoNotStarveAFreshDevice(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let lease = leased ? try await onlyLease(of: store) : nil
            let context = ApplyContext(partition: 0, lease: lease)
            let fresh = "ffff" + String(repeating: "f", count: 60)
            _ = try await store.apply(
                [register("d-fresh", token: fresh, for: "u-fresh")], policy: .unseen, context: context)
            let registration = try await claimPartitionZero(
                store, lease: lease, limit: 256, recording: DeliveryRecord())
            #expect(registration.pushes.count == 1)
            let waiting = 25_000
            #expect(waiting > DeliveryQueries.claimHorizon)
            // One retried push each, its next attempt far ahead; tokens 'aaaa…00000' and up sort before the fresh one.
            let series =
                backend == .postgres
                ? "SELECT generate_series(1, \(waiting)) AS n"
                : "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < \(waiting)) SELECT n FROM s"
            let token = backend == .postgres ? "'aaaa' || lpad(n::text, 8, '0')" : "'aaaa' || printf('%08d', n)"
            try await execute(
                store,
                """
                INSERT INTO outbox (user_id, event_id, event_type, token, provider, topic, kind, event_json,
                    unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews,
                    partition_id, created_at, attempts, next_attempt_at)
                SELECT 'u-w' || n, 'w-' || n, 'device_registered', \(token), 'fcm', NULL, 'badge', NULL, 0, 0, 0, 0,
                    0, TRUE, 0, 0, 3, 9000000000000000 FROM (\(series)) AS series
                """)
            _ = try await store.apply([follow("n-fresh", at: 1, to: "u-fresh")], policy: .unseen, context: context)
            let next = try await claimPartitionZero(
                store, lease: lease, limit: 256, recording: .sentAll(registration))
            #expect(next.pushes.map(\.push.eventID) == ["n-fresh"])
        }
    }

    /// Many devices of one partition with backlogs, the oldest of them waiting for a retry: one claim takes the
    /// 16 oldest pushes of every other device (the claim reads each device's head, not the rows in between) and
    /// nothing of the waiting one, whose queue holds nobody back; once its retry is due, it drains in order.
    @Test(arguments: Backend.allCases, [false, true])
    func aClaimTakesEveryDevicesShareAndSkipsADeviceThatWaits(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let lease = leased ? try await onlyLease(of: store) : nil
            let context = ApplyContext(partition: 0, lease: lease)
            @Sendable func claim(recording: DeliveryRecord) async throws -> ClaimedPushes {
                try await claimPartitionZero(store, lease: lease, limit: 1_000, recording: recording)
            }
            let devices = 12
            let tokens = (0..<devices).map { String(format: "cccc%04d", $0) + String(repeating: "c", count: 24) }
            _ = try await store.apply(
                (0..<devices).map { register("d\($0)", token: tokens[$0], for: "u\($0)") }, policy: .unseen,
                context: context)
            let registrations = try await claim(recording: DeliveryRecord())
            #expect(registrations.pushes.count == devices)
            #expect(
                try await claim(recording: .sentAll(registrations)).pushes.isEmpty)
            var recording = DeliveryRecord()
            // 40 follows to each user, interleaved; the waiting device's are the oldest.
            let perDevice = 40
            _ = try await store.apply(
                (0..<perDevice).flatMap { n in
                    (0..<devices).map { follow("f\($0)-\(n)", at: Int64(n * devices + $0 + 1), to: "u\($0)") }
                }, policy: .unseen, context: context)
            try await execute(
                store,
                "UPDATE outbox SET attempts = 1, next_attempt_at = 9000000000000000 WHERE id = "
                    + "(SELECT min(id) FROM outbox WHERE token = '\(tokens[0])')")

            let bound = ClaimedPushes.perDeviceLimit
            let first = try await claim(recording: recording)
            #expect(first.reachedLimit)
            #expect(first.pushes.map(\.outbox.id) == first.pushes.map(\.outbox.id).sorted())
            #expect(!first.pushes.contains { $0.push.token == tokens[0] })
            for device in 1..<devices {
                #expect(
                    first.pushes.filter { $0.push.token == tokens[device] }.map(\.push.eventID)
                        == (0..<bound).map { "f\(device)-\($0)" })
            }
            recording = .sentAll(first)
            try await execute(store, "UPDATE outbox SET next_attempt_at = 0 WHERE token = '\(tokens[0])'")
            var drained: [String: [String]] = [:]
            var claims = 0
            while true {
                let next = try await claim(recording: recording)
                claims += 1
                for push in next.pushes { drained[push.push.token, default: []].append(push.push.eventID) }
                recording = .sentAll(next)
                if next.pushes.isEmpty && !next.reachedLimit { break }
                try #require(claims <= perDevice / bound + 3, "the backlogs do not drain")
            }
            #expect(drained[tokens[0]] == (0..<perDevice).map { "f0-\($0)" })
            for device in 1..<devices {
                #expect(drained[tokens[device]] == (bound..<perDevice).map { "f\(device)-\($0)" })
            }
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }
}

/// A delivery claim of partition 0 as a delivery round makes it (under `lease`, none when nil), recording
/// `recording` first.
private func claimPartitionZero(
    _ store: any PipelineStore, lease: PartitionLease?, limit: Int, recording: DeliveryRecord
) async throws -> ClaimedPushes {
    try await store.claimPushes(
        partition: 0, limit: limit, policy: .unseen, lease: lease, skipClaimedBefore: nil, recording: recording)
}
