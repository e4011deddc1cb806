import BadgeWire

/// A device token a provider called dead, to be reported back to the producers (contract v1.1, token feedback):
/// written into `token_feedback` in the transaction that deactivates the device (``DeliveryRecord/feedback``), and
/// published from there to the feedback exchange, then deleted (see `FeedbackPublisher` in `BadgeWorker`).
public struct TokenFeedback: Sendable, Equatable {
    /// The dead token.
    public var token: String
    /// The provider that called it dead.
    public var provider: PushProvider
    /// The app of the deployment's configuration that served the device, when it names one.
    public var app: String?
    /// The provider's reason (`Unregistered`, `BadDeviceToken`, `UNREGISTERED`, …).
    public var reason: String
    /// When the provider says the token stopped being valid (APNs's 410 `timestamp`), in microseconds since the
    /// epoch by the provider's clock: a registration that occurred before it does not make the token active again.
    public var providerTimestamp: Int64?

    /// Creates a feedback entry.
    public init(token: String, provider: PushProvider, app: String? = nil, reason: String, providerTimestamp: Int64?) {
        self.token = token
        self.provider = provider
        self.app = app
        self.reason = reason
        self.providerTimestamp = providerTimestamp
    }
}

/// A ``TokenFeedback`` waiting in `token_feedback` to be published.
public struct StoredTokenFeedback: Sendable, Equatable {
    /// Its row id, for ``PipelineStore/deleteFeedback(_:)``.
    public var id: Int64
    /// What is reported.
    public var feedback: TokenFeedback
    /// When the deactivation was recorded, by the database's clock, in microseconds since the epoch.
    public var recordedAt: Int64

    /// Creates a stored entry.
    public init(id: Int64, feedback: TokenFeedback, recordedAt: Int64) {
        self.id = id
        self.feedback = feedback
        self.recordedAt = recordedAt
    }
}

/// The queries of `token_feedback`.
enum FeedbackQueries {
    /// Inserts `feedback`, recorded at the statement's now, and moves each token's `devices.unregistered_at` up to
    /// its provider's timestamp; inside the caller's transaction (the one that deactivates the tokens).
    static func insert(_ feedback: [TokenFeedback], sql: any SQLExecutor) async throws {
        guard !feedback.isEmpty else { return }
        var set = SQLRowSet(
            [
                ("token", .text), ("provider", .text), ("app", .text), ("reason", .text),
                ("provider_timestamp", .int),
            ])
        for entry in feedback {
            set.append([
                .text(entry.token), .text(entry.provider.rawValue), .text(entry.app), .text(entry.reason),
                .int(entry.providerTimestamp),
            ])
        }
        var binds = SQLBinds()
        let source = set.table("s", binds: &binds, dialect: sql.dialect)
        try await sql.execute(
            "INSERT INTO token_feedback (token, provider, app, reason, provider_timestamp, recorded_at) "
                + "SELECT s.token, s.provider, s.app, s.reason, s.provider_timestamp, "
                + "\(FleetQueries.statementNow(sql.dialect)) FROM \(source) ORDER BY s.ord",
            binds.values)
        let stamped = feedback.filter { $0.providerTimestamp != nil }
        guard !stamped.isEmpty else { return }
        var stamps = SQLRowSet([("token", .text), ("at", .int)])
        var latest: [String: Int64] = [:]
        for entry in stamped {
            guard let at = entry.providerTimestamp else { continue }
            latest[entry.token] = max(latest[entry.token] ?? at, at)
        }
        for (token, at) in latest.sorted(by: { $0.key < $1.key }) { stamps.append([.text(token), .int(at)]) }
        var stampBinds = SQLBinds()
        let stampSource = stamps.table("s", binds: &stampBinds, dialect: sql.dialect)
        try await sql.execute(
            "UPDATE devices SET unregistered_at = s.at FROM \(stampSource) WHERE devices.token = s.token "
                + "AND (devices.unregistered_at IS NULL OR devices.unregistered_at < s.at)",
            stampBinds.values)
    }

    /// Takes up to `limit` entries to publish, oldest first: those nobody took within `hold` (a publisher that
    /// took some and died leaves them to another after that), marked taken until the database's now plus `hold`.
    static func take(limit: Int, hold: Duration, database: any SQLTransactor) async throws -> [StoredTokenFeedback] {
        let dialect = database.dialect
        let now = FleetQueries.statementNow(dialect)
        var binds = SQLBinds()
        let statement =
            "UPDATE token_feedback SET taken_until = \(now) + \(binds.add(.int(max(0, hold.wholeMicroseconds)))) "
            + "WHERE id IN (SELECT id FROM token_feedback WHERE taken_until <= \(now) ORDER BY id "
            + "LIMIT \(binds.add(.int(Int64(limit))))\(dialect.forUpdateSkipLocked)) "
            + "RETURNING id, token, provider, app, reason, provider_timestamp, recorded_at"
        let rows = try await database.statement(statement, binds.values)
        var taken: [StoredTokenFeedback] = []
        for row in rows {
            guard let id = try row["id"].int64, let token = try row["token"].string,
                let provider = try row["provider"].string.flatMap(PushProvider.init(rawValue:)),
                let reason = try row["reason"].string, let recordedAt = try row["recorded_at"].int64
            else { throw StoreError.corrupt("a token_feedback row without its token, provider, reason or time") }
            taken.append(
                StoredTokenFeedback(
                    id: id,
                    feedback: TokenFeedback(
                        token: token, provider: provider, app: try row["app"].string, reason: reason,
                        providerTimestamp: try row["provider_timestamp"].int64),
                    recordedAt: recordedAt))
        }
        return taken.sorted { $0.id < $1.id }
    }

    /// How long until the earliest entry is free to take (zero when one is free now: never taken, or its hold
    /// ended); nil when no entry waits. One statement.
    static func ahead(database: any SQLTransactor) async throws -> Duration? {
        let rows = try await database.read(
            "SELECT min(taken_until) - \(FleetQueries.statementNow(database.dialect)) AS free_in FROM token_feedback",
            [])
        return try rows.first?["free_in"].int64.map { Duration.microseconds(max(0, $0)) }
    }

    /// Deletes published entries.
    static func delete(_ ids: [Int64], database: any SQLTransactor) async throws {
        guard !ids.isEmpty else { return }
        var set = SQLRowSet([("id", .int)])
        for id in ids.sorted() { set.append([.int(id)]) }
        var binds = SQLBinds()
        let source = "SELECT id FROM \(set.table("s", binds: &binds, dialect: database.dialect))"
        _ = try await database.statement(
            "DELETE FROM token_feedback WHERE \(database.dialect.among("id", source))", binds.values)
    }
}
