import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("The outbox's planner statistics follow a backlog")
struct OutboxStatisticsTests {
    @Test func theStatisticsAreBehindOnlyWhenABacklogIsFarLargerThanTheyRecord() {
        let depth = StoreQueries.outboxAnalyzeDepth
        #expect(StoreQueries.outboxStatisticsAreBehind(depth: depth, reltuples: 0))
        #expect(StoreQueries.outboxStatisticsAreBehind(depth: 50_000, reltuples: 12_000))
        #expect(!StoreQueries.outboxStatisticsAreBehind(depth: depth - 1, reltuples: 0))
        #expect(!StoreQueries.outboxStatisticsAreBehind(depth: 40_000, reltuples: 10_000))
        // Never analyzed (-1) or no statistics: PostgreSQL estimates from the table's size itself.
        #expect(!StoreQueries.outboxStatisticsAreBehind(depth: 50_000, reltuples: -1))
        #expect(!StoreQueries.outboxStatisticsAreBehind(depth: 50_000, reltuples: nil))
    }

    @Test func aBacklogSampledWhileTheStatisticsRecordAnEmptyOutboxIsAnalyzed() async throws {
        try await withStore(.postgres) { store in
            let database = store.sqlBackend.database
            func reltuples() async throws -> Double {
                let row = try await database.transaction { sql in
                    try await sql.query(
                        "SELECT reltuples::float8::text AS r FROM pg_class WHERE oid = to_regclass('outbox')", []
                    ).first
                }
                return try #require(try row?["r"].string.flatMap(Double.init))
            }
            func fill(_ count: Int, from first: Int) async throws {
                try await database.transaction { sql in
                    try await sql.execute(
                        """
                        INSERT INTO outbox (user_id, event_id, event_type, token, provider, kind,
                            unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews,
                            partition_id)
                        SELECT 'u' || n, 'e' || n, 'follow', 't' || (n % 50), 'apns', 'badge', 0, 0, 0, 0, n, false, 0
                        FROM generate_series(\(first), \(first + count - 1)) AS n
                        """)
                }
            }
            // Drained and vacuumed: the statistics record an empty outbox.
            try await database.transaction { try await $0.execute("ANALYZE outbox") }
            #expect(try await reltuples() == 0)
            // A backlog below the depth that is looked at: left alone.
            try await fill(StoreQueries.outboxAnalyzeDepth - 1, from: 1)
            #expect(try await store.outboxBacklog(partitions: [0]).first?.depth == StoreQueries.outboxAnalyzeDepth - 1)
            #expect(try await reltuples() == 0)
            // Past it, and far more than the statistics say: the sample analyzes the outbox.
            try await fill(3_000, from: StoreQueries.outboxAnalyzeDepth)
            let depth = try await store.outboxBacklog(partitions: [0]).first?.depth
            #expect(depth == StoreQueries.outboxAnalyzeDepth + 2_999)
            #expect(try await reltuples() == Double(StoreQueries.outboxAnalyzeDepth + 2_999))
        }
    }
}
