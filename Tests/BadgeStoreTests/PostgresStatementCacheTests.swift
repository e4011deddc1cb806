import Foundation
import PostgresNIO
import Testing

@_spi(Testing) @testable import BadgeStore

@Suite("Prepared statements: the cache's decisions")
struct PostgresStatementCacheTests {
    @Test func aStatementIsPreparedOnItsThirdRunOnAConnectionAndExecutedFromThenOn() {
        let cache = PostgresStatementCache()
        let key = "i|SELECT $1"
        var watched = 0
        let steps = (0..<5).map { _ in cache.step(key, on: 7) { watched += 1 } }
        #expect(steps[0] == .direct)
        #expect(steps[1] == .direct)
        guard case .prepare(let name) = steps[2] else {
            Issue.record("third run: \(steps[2])")
            return
        }
        // Not reported prepared yet (its PREPARE has not run): it is neither executed nor prepared twice.
        #expect(steps[3] == .direct)
        cache.prepared(key, as: name, on: 7)
        #expect(cache.step(key, on: 7) {} == .execute(name))
        // Another connection has its own statements.
        #expect(cache.step(key, on: 8) { watched += 1 } == .direct)
        #expect(watched == 2)
        cache.forget(7)
        #expect(cache.step(key, on: 7) {} == .direct)
    }

    @Test func aRefusedStatementAlwaysRunsPlainly() {
        let cache = PostgresStatementCache()
        cache.refuse("t|BEGIN $1")
        for _ in 0..<5 { #expect(cache.step("t|BEGIN $1", on: 1) {} == .direct) }
    }

    @Test func aConnectionPreparesAtMostItsCapacity() {
        let cache = PostgresStatementCache()
        for index in 0..<PostgresStatementCache.capacity {
            let key = "i|SELECT \(index) + $1"
            for _ in 1..<PostgresStatementCache.usesBeforePreparing { _ = cache.step(key, on: 1) {} }
            guard case .prepare(let name) = cache.step(key, on: 1, watch: {}) else {
                Issue.record("statement \(index) not prepared")
                return
            }
            cache.prepared(key, as: name, on: 1)
        }
        let extra = "i|SELECT -1 + $1"
        for _ in 0..<5 { #expect(cache.step(extra, on: 1) {} == .direct) }
    }

    @Test func statementsWithoutBindsOrWithValuesThatHaveNoLiteralAreNotPrepared() {
        #expect(PostgresStatementCache.key("BEGIN", []) == nil)
        #expect(PostgresStatementCache.key("SELECT $1", [.null]) == nil)
        #expect(PostgresStatementCache.key("SELECT $1", [.text("a\u{0}b")]) == nil)
        #expect(PostgresStatementCache.key("SELECT $1", [.text("\u{0}")]) == nil)
        #expect(PostgresStatementCache.key("SELECT $1", [.text(String(repeating: "é", count: 4000) + "\u{0}")]) == nil)
        #expect(PostgresStatementCache.key("SELECT $1", [.text("")]) == "t|SELECT $1")
        #expect(
            PostgresStatementCache.key("SELECT $1, $2, $3", [.int(1), .text("x"), .bool(true)])
                == "itb|SELECT $1, $2, $3"
        )
    }

    @Test func prepareAndExecuteStatements() {
        #expect(
            PostgresStatementCache.prepareStatement(
                "SELECT $1, $2, $3", name: "s1", binds: [.int(1), .text(""), .bool(false)])
                == "PREPARE s1 (bigint, text, boolean) AS SELECT $1, $2, $3")
        #expect(
            PostgresStatementCache.executeStatement(
                name: "s1", binds: [.int(-1), .text("it's a \\ test"), .bool(true)])
                == #"EXECUTE s1((-1)::bigint, $v$it's a \ test$v$, TRUE)"#)
    }

    @Test func textLiteralsAreDollarQuotedWithATagTheTextDoesNotHold() {
        let cases: [(String, String)] = [
            ("", "$v$$v$"), ("'", "$v$'$v$"), (#"\"#, #"$v$\$v$"#), ("é'😀", "$v$é'😀$v$"), ("plain", "$v$plain$v$"),
            ("$", "$v$$$v$"), ("a$$b", "$v$a$$b$v$"), ("$v", "$v0$$v$v0$"), ("x$v$y", "$v0$x$v$y$v0$"),
            ("$v0 $v1$", "$v2$$v0 $v1$$v2$"), ("$V", "$v$$V$v$"),
        ]
        for (text, literal) in cases {
            #expect(PostgresStatementCache.literal(.text(text)) == literal, "\(text)")
        }
    }
}

@Suite("Prepared statements on PostgreSQL", .serialized)
struct PostgresPreparedStatementTests {
    /// Values that must come back exactly as they were bound, prepared or not.
    static let values: [SQLValue] = [
        .int(Int64.min), .int(Int64.max), .int(0), .bool(true), .bool(false),
        .text(""), .text("it's"), .text(#"back\slash \' \\ \n"#), .text("line\nbreak\ttab"), .text("ünï😀код"),
        .text("$1 $$ -- /* */ ;"), .text(String(repeating: "x", count: 5000)), .text("$v"), .text("$v$"),
        .text("a$v0$b$v$"), .text("ends in $"), .text("ends in $v"), .text(String(repeating: #"\""#, count: 20_000)),
    ]

    @Test func everyValueReadsBackTheSameWhenTheStatementIsPreparedAndExecuted() async throws {
        let database = TestDatabase(.postgres)
        let store = try database.makeStore() as! PostgresStore
        try await Self.running(store, on: database) {
            let binds = Self.values
            let statement = "SELECT " + binds.indices.map { "$\($0 + 1) AS c\($0)" }.joined(separator: ", ")
            // The test store has at most 4 connections: one of them runs it often enough to prepare it.
            var prepared = 0
            for _ in 0..<(4 * PostgresStatementCache.usesBeforePreparing) {
                let (row, statements) = try await store.database.transaction { sql in
                    let row = try await sql.query(statement, binds).first
                    let statements = try await sql.query(
                        "SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'badgepipe_%'", []
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
        let store = PostgresStore(
            configuration: configuration, schema: database.name, preparedStatements: false, logger: testLogger)
        try await Self.running(store, on: database) {
            for _ in 0..<(2 * PostgresStatementCache.usesBeforePreparing) {
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
        let store = try database.makeStore() as! PostgresStore
        try await Self.running(store, on: database) {
            // PREPARE takes only SELECT, INSERT, UPDATE, DELETE, MERGE and VALUES; a CALL with binds runs plainly.
            try await store.database.transaction { sql in
                try await sql.execute("CREATE PROCEDURE keep(x bigint) LANGUAGE sql AS 'SELECT 1'")
            }
            var transient = 0
            var succeeded = 0
            for _ in 0..<6 {
                do {
                    try await store.database.transaction { sql in try await sql.execute("CALL keep($1)", [.int(5)]) }
                    succeeded += 1
                } catch let error as StoreError where error.transient {
                    transient += 1
                }
            }
            // The run that tried to prepare it failed, transiently; every other one succeeded.
            #expect(transient == 1)
            #expect(succeeded == 5)
            #expect(transient <= 1)
        }
    }

    /// Runs `store` (migrated) for `body`, then drops its schema and closes it.
    private static func running(
        _ store: PostgresStore, on database: TestDatabase, _ body: () async throws -> Void
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
