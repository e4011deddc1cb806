import BadgeCore
import BadgeWire
import Foundation
import Testing

@testable import BadgeStore

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
                try await store.claimPushes(
                    partition: 0, limit: 256, policy: .unseen,
                    lease: lease, skipClaimedBefore: nil, recording: recording)
            }
            _ = try await store.apply(
                [register("d-heavy", token: tokenA, for: "u-heavy"), register("d-next", token: tokenB, for: "u-next")],
                policy: .unseen, context: context)
            let registrations = try await claim(recording: DeliveryRecord())
            #expect(registrations.pushes.count == 2)
            var recording = DeliveryRecord(sent: registrations.pushes.map(\.outbox.id))

            for start in stride(from: 0, to: Self.heavyBacklog, by: 500) {
                let events = (start..<start + 500).map { follow("h\($0)", at: Int64($0 + 1), to: "u-heavy") }
                _ = try await store.apply(events, policy: .unseen, context: context)
            }
            _ = try await store.apply(
                [follow("n0", at: Int64(Self.heavyBacklog + 1), to: "u-next")], policy: .unseen, context: context)

            let bound = ClaimedPushes.perDeviceLimit
            let first = try await claim(recording: recording)
            #expect(first.pushes.filter { $0.push.token == tokenB }.map(\.push.eventID) == ["n0"])
            #expect(first.pushes.filter { $0.push.token == tokenA }.map(\.push.eventID) == (0..<bound).map { "h\($0)" })
            #expect(first.reachedLimit)

            var heavy = first.pushes.filter { $0.push.token == tokenA }
            recording = DeliveryRecord(sent: first.pushes.map(\.outbox.id))
            var claims = 1
            while true {
                let next = try await claim(recording: recording)
                claims += 1
                #expect(next.pushes.allSatisfy { $0.push.token == tokenA })
                #expect(next.pushes.count <= bound)
                // A claim that took a full share of the device says more may be due.
                if next.pushes.count == bound { #expect(next.reachedLimit) }
                heavy += next.pushes
                recording = DeliveryRecord(sent: next.pushes.map(\.outbox.id))
                if next.pushes.isEmpty && !next.reachedLimit { break }
                try #require(claims <= Self.heavyBacklog / bound + 3, "the backlog does not drain")
            }
            #expect(heavy.map(\.push.eventID) == (0..<Self.heavyBacklog).map { "h\($0)" })
            #expect(heavy.map(\.outbox.id) == heavy.map(\.outbox.id).sorted())
            #expect(Set(heavy.map(\.outbox.id)).count == Self.heavyBacklog)
            #expect(claims == (Self.heavyBacklog + bound - 1) / bound + 1)
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    /// A device whose user's badge version jumped between two of its queued pushes by more than the claim's
    /// version window (`DeliveryQueries.versionWindow`, as a read applied in many chunks does): a claim takes its
    /// pushes before the jump, the next ones those after it, in order; nothing is left behind.
    @Test(arguments: Backend.allCases)
    func aDeviceWhoseVersionsJumpIsStillDrainedInOrder(backend: Backend) async throws {
        try await withStore(backend) { store in
            let context = ApplyContext(partition: 0)
            func claim(recording: DeliveryRecord) async throws -> ClaimedPushes {
                try await store.claimPushes(
                    partition: 0, limit: 256, policy: .unseen,
                    lease: nil, skipClaimedBefore: nil, recording: recording)
            }
            _ = try await store.apply([register("d1", token: tokenA)], policy: .unseen, context: context)
            try await store.markSent(try await claim(recording: DeliveryRecord()).pushes.map(\.outbox.id))
            var recording = DeliveryRecord()
            _ = try await store.apply(
                (0..<40).map { follow("n\($0)", at: Int64($0 + 1)) }, policy: .unseen, context: context)
            let planned = try await store.pendingPushes(limit: 100, partition: 0)
            #expect(planned.count == 40)
            // The version jumps by far more than the window after the fifth push.
            try await execute(
                store,
                "UPDATE outbox SET badge_version = badge_version + \(DeliveryQueries.versionWindow * 10) "
                    + "WHERE id > \(planned[4].id)")

            var claimed: [String] = []
            var sizes: [Int] = []
            while true {
                let next = try await claim(recording: recording)
                recording = DeliveryRecord(sent: next.pushes.map(\.outbox.id))
                if next.pushes.isEmpty { break }
                claimed += next.pushes.map(\.push.eventID)
                sizes.append(next.pushes.count)
                try #require(sizes.count < 10)
            }
            #expect(claimed == (0..<40).map { "n\($0)" })
            #expect(sizes == [5, 16, 16, 3])
        }
    }

    /// An ingestion batch claims a device's pushes itself up to the claim's bound per device (PostgreSQL): of a
    /// device with more pushes in the batch, it claims the first share and leaves the rest, behind it, to the
    /// delivery stage's claims, which take them once the share is recorded; the other device's pushes of the same
    /// batch are claimed by it as before.
    @Test func aBatchClaimsADevicesShareAndLeavesTheRestToTheDeliveryClaims() async throws {
        try await withStore(.postgres) { store in
            let lease = try await onlyLease(of: store)
            let claiming = ApplyContext(partition: 0, lease: lease, claimsPushes: true)
            func claim(recording: DeliveryRecord = DeliveryRecord()) async throws -> ClaimedPushes {
                try await store.claimPushes(
                    partition: 0, limit: 256, policy: .unseen,
                    lease: lease, skipClaimedBefore: nil, recording: recording)
            }
            _ = try await store.apply(
                [register("d-heavy", token: tokenA, for: "u-heavy"), register("d-next", token: tokenB, for: "u-next")],
                policy: .unseen, context: claiming)
            let registrations = try await claim()
            _ = try await claim(recording: DeliveryRecord(sent: registrations.pushes.map(\.outbox.id)))

            let bound = ClaimedPushes.perDeviceLimit
            let atBound = try await store.apply(
                (0..<bound).map { follow("a\($0)", at: Int64($0 + 1), to: "u-heavy") }, policy: .unseen,
                context: claiming
            ).flatMap(\.pushes)
            #expect(atBound.allSatisfy { $0.claimedEpoch == lease.epoch })
            _ = try await claim(recording: DeliveryRecord(sent: atBound.map(\.id)))

            let events =
                (0..<bound + 4).map { follow("h\($0)", at: Int64(100 + $0), to: "u-heavy") }
                + [follow("n0", at: 200, to: "u-next")]
            let planned = try await store.apply(events, policy: .unseen, context: claiming).flatMap(\.pushes)
            let heavyEpochs = planned.filter { $0.push.token == tokenA }.map(\.claimedEpoch)
            #expect(heavyEpochs == Array(repeating: lease.epoch, count: bound) + [nil, nil, nil, nil])
            #expect(planned.filter { $0.push.token == tokenB }.map(\.claimedEpoch) == [lease.epoch])

            // The share is the batch's (held for its worker): nothing of the device is claimable behind it.
            let meanwhile = try await claim()
            #expect(meanwhile.pushes.isEmpty)
            // Once the share is recorded as sent, a claim takes the rest, in order.
            let handed: [Int64] = planned.compactMap { $0.claimedEpoch == nil ? nil : $0.id }
            let rest = try await claim(recording: DeliveryRecord(sent: handed))
            #expect(rest.pushes.map(\.push.eventID) == (bound..<bound + 4).map { "h\($0)" })
        }
    }
}
