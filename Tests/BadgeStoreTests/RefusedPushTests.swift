import BadgeCore
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// An outbox row the code cannot read never wedges its partition: the claim that meets it moves it into
/// `refused_pushes` with its reason, in the claim's transaction, and claims the other rows as if it were not there.
@Suite("Refused pushes")
struct RefusedPushTests {
    /// Each unreadable row: the columns that differ from a valid alert of u-alice, and the reason expected.
    private struct Corruption {
        var eventType = "follow"
        var provider = "apns"
        var kind = "alert"
        var eventJSON: String? =
            #"{"id":"x","type":"follow","recipient":"u-alice","occurred_at":"2026-11-21T10:00:00Z","#
            + #""actor":{"id":"u-bob","name":"Bob"}}"#
        var badge = "1"
        var reason: RefusedPush.Reason
    }

    private static func corruptions(_ backend: Backend) -> [Corruption] {
        var list = [
            Corruption(provider: "huawei", reason: .unknownProvider),
            Corruption(eventType: "poke", reason: .unknownEventType),
            Corruption(eventJSON: nil, reason: .missingValue),
            Corruption(eventJSON: "{not json", reason: .badEvent),
            Corruption(eventJSON: #"{"id":"x"}"#, reason: .badEvent),
            Corruption(kind: "silent", reason: .unknownKind),
        ]
        // SQLite keeps text in an integer column as it was written.
        if backend == .sqlite { list.append(Corruption(badge: "'many'", reason: .badValue)) }
        return list
    }

    @Test(arguments: Backend.allCases, [false, true])
    func aCorruptOutboxRowIsMovedAsideAndTheOthersAreClaimed(backend: Backend, leased: Bool) async throws {
        try await withStore(backend) { store in
            let database = try #require((store as? any SQLBackedStore)?.sqlBackend.database)
            let lease: PartitionLease? =
                leased
                ? try #require(
                    try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
                        .leases.first)
                : nil
            let context = ApplyContext(partition: 0, lease: lease)
            // Valid pushes of two devices of the partition, the unreadable rows (u-alice's device) among them.
            _ = try await store.apply(
                [
                    register("d1", token: tokenA), register("d2", token: tokenB, for: "u-carol"),
                    follow("n1", at: 1), follow("m1", at: 1, to: "u-carol"),
                ], policy: .unseen, context: context)
            let corruptions = Self.corruptions(backend)
            var corruptIDs: [Int64] = []
            for corruption in corruptions {
                let row = try await database.transaction { sql in
                    try await sql.query(
                        """
                        INSERT INTO outbox (user_id, event_id, event_type, token, provider, topic, environment, kind,
                            event_json, unread_notifications, unseen_notifications, unread_messages, badge,
                            badge_version, previews, partition_id, created_at)
                        VALUES ('u-alice', 'x', $1, $2, $3, 'com.example.app', 'production', $4, $5, 1, 1, 0,
                            \(corruption.badge), 1, TRUE, 0, 0)
                        RETURNING id
                        """,
                        [
                            .text(corruption.eventType), .text(tokenA), .text(corruption.provider),
                            .text(corruption.kind), .text(corruption.eventJSON),
                        ])
                }
                corruptIDs.append(try #require(try row.first?["id"].int64))
            }
            _ = try await store.apply(
                [follow("n2", at: 2), follow("m2", at: 2, to: "u-carol")], policy: .unseen, context: context)

            let before = Timestamp.now().microsecondsSinceEpoch
            let claim = try await store.claimPushes(
                partition: 0, limit: 100, policy: .unseen, lease: lease,
                skipClaimedBefore: nil, recording: DeliveryRecord())
            let after = Timestamp.now().microsecondsSinceEpoch

            // Every valid alert is claimed, in order per device (the registrations' badge-only pushes are coalesced).
            #expect(claim.pushes.filter { $0.push.token == tokenA }.map(\.push.eventID) == ["n1", "n2"])
            #expect(claim.pushes.filter { $0.push.token == tokenB }.map(\.push.eventID) == ["m1", "m2"])
            #expect(claim.refused.map(\.outboxID) == corruptIDs)
            #expect(claim.refused.map(\.reason) == corruptions.map(\.reason))
            #expect(claim.refused.allSatisfy { $0.user == "u-alice" && $0.token == tokenA && $0.partition == 0 })

            // The refused rows are kept with their reason, their columns as text and the database's time.
            let kept = try await database.transaction { sql in
                try await sql.query(
                    "SELECT outbox_id, user_id, token, partition_id, reason, detail, outbox_row, refused_at "
                        + "FROM refused_pushes ORDER BY outbox_id", [])
            }
            #expect(try kept.map { try $0["outbox_id"].int64 } == corruptIDs)
            #expect(try kept.map { try $0["reason"].string } == corruptions.map(\.reason.rawValue))
            for (row, corruption) in zip(kept, corruptions) {
                #expect(try row["user_id"].string == "u-alice")
                #expect(try row["token"].string == tokenA)
                #expect(try row["partition_id"].int64 == 0)
                #expect(try row["detail"].string?.isEmpty == false)
                let text = try #require(try row["outbox_row"].string)
                let columns = try JSONValue.parse(text)
                #expect(columns["provider"]?.stringValue == corruption.provider, "\(text)")
                #expect(columns["event_type"]?.stringValue == corruption.eventType, "\(text)")
                #expect(columns["event_json"]?.stringValue == corruption.eventJSON, "\(text)")
                #expect(columns["id"] != nil, "\(text)")
                // The database's clock, which on this machine is ours (a second's slack for SQLite's rounding).
                let at = try #require(try row["refused_at"].int64)
                #expect(at >= before - 1_000_000 && at <= after + 1_000_000)
            }

            // Once the claimed pushes are recorded as sent, the outbox is empty and nothing else is due.
            let next = try await store.claimPushes(
                partition: 0, limit: 100, policy: .unseen, lease: lease,
                skipClaimedBefore: nil, recording: .sentAll(claim))
            #expect(next.pushes.isEmpty)
            #expect(next.refused.isEmpty)
            #expect(try await store.pendingPushes(limit: 100).isEmpty)
        }
    }

    /// A claim that reaches its limit with refused rows among those it took says more may be due, so the caller
    /// claims again at once instead of waiting for the next poll.
    @Test(arguments: Backend.allCases)
    func refusedRowsCountTowardTheClaimsLimit(backend: Backend) async throws {
        try await withStore(backend) { store in
            let database = try #require((store as? any SQLBackedStore)?.sqlBackend.database)
            _ = try await store.apply(
                [register("d1", token: tokenA), follow("n1", at: 1)], policy: .unseen,
                context: ApplyContext(partition: 0))
            try await database.transaction { sql in
                try await sql.execute(
                    """
                    INSERT INTO outbox (user_id, event_id, event_type, token, provider, kind, unread_notifications,
                        unseen_notifications, unread_messages, badge, badge_version, previews, partition_id)
                    VALUES ('u-carol', 'y1', 'follow', $1, 'huawei', 'badge', 0, 0, 0, 0, 1, TRUE, 0),
                        ('u-carol', 'y2', 'follow', $1, 'huawei', 'badge', 0, 0, 0, 0, 2, TRUE, 0)
                    """, [.text(tokenB)])
            }
            // Ids in order: d1's badge push, n1, y1, y2. A claim of 3 takes d1, n1 and y1.
            let first = try await store.claimPushes(
                partition: 0, limit: 3, policy: .unseen, lease: nil,
                skipClaimedBefore: nil, recording: DeliveryRecord())
            #expect(first.reachedLimit)
            #expect(first.refused.count == 1)
            let second = try await store.claimPushes(
                partition: 0, limit: 3, policy: .unseen, lease: nil,
                skipClaimedBefore: nil, recording: .sentAll(first))
            #expect(second.refused.map(\.reason) == [.unknownProvider])
            #expect(!second.reachedLimit)
            #expect(try await store.pendingPushes(limit: 100).isEmpty)
        }
    }
}
