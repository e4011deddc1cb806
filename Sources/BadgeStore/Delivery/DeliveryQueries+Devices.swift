import BadgeCore

extension DeliveryQueries {
    /// The devices of `rows`' tokens, locked `FOR NO KEY UPDATE` in token order (so that concurrent claims do not
    /// deadlock), as the push guard knows them.
    static func lockDevices(of rows: [OutboxPush], sql: any SQLExecutor) async throws -> [String: PushGuard.Device] {
        var tokens = SQLRowSet([("token", .text)])
        for token in Set(rows.map(\.push.token)).sorted() { tokens.append([.text(token)]) }
        var binds = SQLBinds()
        let source = tokens.table("s", binds: &binds, dialect: sql.dialect)
        var stored: [String: PushGuard.Device] = [:]
        for row in try await sql.query(
            "SELECT token, user_id, pushed_version FROM devices WHERE "
                + sql.dialect.among("token", "SELECT token FROM \(source)") + " ORDER BY token"
                + sql.dialect.forNoKeyUpdate,
            binds.values)
        {
            guard let token = try row["token"].string, let user = try row["user_id"].string,
                let version = try row["pushed_version"].int64
            else { throw StoreError.corrupt("bad devices row") }
            stored[token] = PushGuard.Device(user: user, pushedVersion: version)
        }
        return stored
    }
}
