import Foundation
import PostgresNIO
import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("Prepared statements: the cache's decisions")
struct PostgresStatementCacheTests {
    /// The cache with names for statements, as the tests keep them.
    typealias Cache = PostgresStatementCache<String>

    @Test func aStatementIsPreparedOnItsThirdRunOnAConnectionAndExecutedFromThenOn() {
        let cache = Cache()
        let key = "i|SELECT $1"
        var watched = 0
        let steps = (0..<5).map { _ in cache.step(key, on: 7) { watched += 1 } }
        #expect(steps.map(Self.describe) == ["direct", "direct", "prepare", "direct", "direct"])
        // Not reported prepared yet (its preparation has not finished): neither executed nor prepared twice.
        cache.prepared(key, as: "s1", on: 7)
        #expect(Self.describe(cache.step(key, on: 7) {}) == "execute s1")
        // Another connection has its own statements.
        #expect(Self.describe(cache.step(key, on: 8) { watched += 1 }) == "direct")
        #expect(watched == 2)
        cache.forget(7)
        #expect(Self.describe(cache.step(key, on: 7) {}) == "direct")
    }

    @Test func aRefusedStatementAlwaysRunsPlainly() {
        let cache = Cache()
        cache.refuse("t|BEGIN $1")
        for _ in 0..<5 { #expect(Self.describe(cache.step("t|BEGIN $1", on: 1) {}) == "direct") }
    }

    @Test func aConnectionPreparesAtMostItsCapacity() {
        let cache = Cache()
        for index in 0..<Cache.capacity {
            let key = "i|SELECT \(index) + $1"
            for _ in 1..<Cache.usesBeforePreparing { _ = cache.step(key, on: 1) {} }
            guard case .prepare = cache.step(key, on: 1, watch: {}) else {
                Issue.record("statement \(index) not prepared")
                return
            }
            cache.prepared(key, as: "s\(index)", on: 1)
        }
        let extra = "i|SELECT -1 + $1"
        for _ in 0..<5 { #expect(Self.describe(cache.step(extra, on: 1) {}) == "direct") }
    }

    @Test func statementsWithoutBindsOrWithValuesThatCannotBeTypedAreNotPrepared() {
        #expect(Cache.key("BEGIN", []) == nil)
        #expect(Cache.key("SELECT $1", [.null]) == nil)
        #expect(Cache.key("SELECT $1", [.text("a\u{0}b")]) == nil)
        #expect(Cache.key("SELECT $1", [.text("\u{0}")]) == nil)
        #expect(Cache.key("SELECT $1", [.text(String(repeating: "é", count: 4000) + "\u{0}")]) == nil)
        #expect(Cache.key("SELECT $1", [.text("")]) == "t|SELECT $1")
        #expect(Cache.key("SELECT $1, $2, $3", [.int(1), .text("x"), .bool(true)]) == "itb|SELECT $1, $2, $3")
    }

    @Test func everyParameterIsCastToItsBindsType() {
        #expect(
            Cache.typed("SELECT $1, $2, $3", [.int(1), .text(""), .bool(false)])
                == "SELECT ($1::bigint), ($2::text), ($3::boolean)")
        #expect(Cache.typed("SELECT $1::jsonb -> 'a'", [.text("{}")]) == "SELECT ($1::text)::jsonb -> 'a'")
        #expect(Cache.typed("WHERE a = $1 OR b = $1", [.int(2)]) == "WHERE a = ($1::bigint) OR b = ($1::bigint)")
        let ten = (1...10).map { SQLValue.int(Int64($0)) }
        #expect(Cache.typed("VALUES ($10,$2)", ten) == "VALUES (($10::bigint),($2::bigint))")
        // A parameter past the binds stays as it is (the server reports it), as does a text without any.
        #expect(Cache.typed("SELECT $2", [.int(1)]) == "SELECT $2")
        #expect(Cache.typed("SELECT 'é', \"ü\"", [.int(1)]) == "SELECT 'é', \"ü\"")
    }

    @Test func parametersInsideLiteralsCommentsIdentifiersAndDollarQuotesAreLeftAlone() {
        let sql = """
            SELECT '$1', 'it''s $1', "a$1", x$1, $1 -- $1
            /* $1 */ , $$ $1 $$, $tag$ $1 $tag$, E'$1', $1
            """
        let expected = """
            SELECT '$1', 'it''s $1', "a$1", x$1, ($1::text) -- $1
            /* $1 */ , $$ $1 $$, $tag$ $1 $tag$, E'$1', ($1::text)
            """
        #expect(Cache.typed(sql, [.text("v")]) == expected)
        // Unterminated: copied to the end.
        #expect(Cache.typed("SELECT $1, 'open $1", [.bool(true)]) == "SELECT ($1::boolean), 'open $1")
        #expect(Cache.typed("SELECT $1 /* open $1", [.bool(true)]) == "SELECT ($1::boolean) /* open $1")
    }

    private static func describe(_ step: Cache.Step) -> String {
        switch step {
        case .direct: "direct"
        case .prepare: "prepare"
        case .execute(let name): "execute \(name)"
        }
    }
}

@Suite("Prepared statements on PostgreSQL", .serialized)
struct PostgresPreparedStatementTests {
    /// Values that must come back exactly as they were bound, prepared or not.
    static let values: [SQLValue] = [
        .int(Int64.min), .int(Int64.max), .int(0), .bool(true), .bool(false),
        .text(""), .text("it's"), .text(#"back\slash \' \\ \n"#), .text("line\nbreak\ttab"), .text("ünï😀код"),
        .text("$1 $$ -- /* */ ;"), .text(String(repeating: "x", count: 5000)),
    ]

    @Test func everyValueReadsBackTheSameWhenTheStatementIsPreparedAndExecuted() async throws {
        let database = TestDatabase(.postgres)
        let store = try database.makeStore() as! PostgresBadgeStore
        try await Self.running(store, on: database) {
            let binds = Self.values
            let statement = "SELECT " + binds.indices.map { "$\($0 + 1) AS c\($0)" }.joined(separator: ", ")
            // The test store has at most 4 connections: one of them runs it often enough to prepare it.
            var prepared = 0
            for _ in 0..<(4 * PostgresStatements.usesBeforePreparing) {
                let (row, statements) = try await store.database.transaction { sql in
                    let row = try await sql.query(statement, binds).first
                    let statements = try await sql.query(
                        "SELECT count(*) AS n FROM pg_prepared_statements WHERE NOT from_sql", []
                    ).first?["n"].int64
                    return (row, statements ?? 0)
                }
                let values = try #require(row).values
                #expect(values == binds)
                prepared = max(prepared, Int(statements))
            }
            #expect(prepared >= 1)
            let (seqscan, planCache) = try await store.database.transaction { sql in
                let row = try await sql.query(
                    "SELECT current_setting('enable_seqscan') AS s, current_setting('plan_cache_mode') AS p", []
                ).first
                return (try row?["s"].string, try row?["p"].string)
            }
            #expect(seqscan == "off")
            #expect(planCache == "force_generic_plan")
        }
    }

    @Test func withPreparedStatementsOffNothingIsPreparedAndSequentialScansStayOn() async throws {
        let database = TestDatabase(.postgres)
        var configuration = try PostgresURL(testDatabaseURL).configuration
        configuration.options.maximumConnections = 1
        let store = PostgresBadgeStore(
            configuration: configuration, schema: database.name, preparedStatements: false, logger: testLogger)
        try await Self.running(store, on: database) {
            for _ in 0..<(2 * PostgresStatements.usesBeforePreparing) {
                let (prepared, seqscan) = try await store.database.transaction { sql in
                    _ = try await sql.query("SELECT $1 AS v", [.int(1)])
                    let prepared = try await sql.query("SELECT count(*) AS n FROM pg_prepared_statements", []).first?[
                        "n"
                    ].int64
                    let seqscan = try await sql.query("SELECT current_setting('enable_seqscan') AS s", []).first?["s"]
                        .string
                    return (prepared, seqscan)
                }
                #expect(prepared == 0)
                #expect(seqscan == "on")
            }
        }
    }

    @Test func aStatementThatCannotBePreparedFailsOnceTransientlyAndThenRunsPlainly() async throws {
        let database = TestDatabase(.postgres)
        let store = try database.makeStore() as! PostgresBadgeStore
        try await Self.running(store, on: database) {
            // A statement the server refuses to parse: plainly it fails for good, every time; the run that tries to
            // prepare it fails transiently (its transaction starts again, and runs it plainly).
            var outcomes: [String] = []
            for _ in 0..<6 {
                do {
                    _ = try await store.database.transaction { sql in
                        try await sql.query("SELECT no_such_function($1) AS v", [.int(5)])
                    }
                    outcomes.append("ok")
                } catch let error as StoreError {
                    outcomes.append(error.transient ? "transient" : error.code.description)
                }
            }
            let refused = "sqlstate_42883"
            #expect(outcomes == [refused, refused, "transient", refused, refused, refused])
            let prepared = try await store.database.transaction { sql in
                try await sql.query("SELECT count(*) AS n FROM pg_prepared_statements", []).first?["n"].int64
            }
            #expect(prepared == 0)
        }
    }

    /// Runs `store` (migrated) for `body`, then drops its schema and closes it.
    private static func running(
        _ store: PostgresBadgeStore, on database: TestDatabase, _ body: () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            try await body()
            await database.drop(using: store)
            try await store.close()
        }
    }
}
