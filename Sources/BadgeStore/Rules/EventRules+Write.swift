import BadgeCore
import BadgeSupport

extension EventRules {
    /// Writes what the batch changed, one part per table and kind of change, and the outbox in planning order, as
    /// one ``SQLWriteBatch`` (one statement on PostgreSQL); returns the outbox rows of ``planned`` (ids increasing
    /// in planning order).
    func write() async throws -> [WrittenPush] {
        var batch = SQLWriteBatch()
        addNotifications(to: &batch)
        addTombstones(to: &batch)
        addMessages(to: &batch)
        addWatermarks(to: &batch)
        addDevices(to: &batch)
        addUsers(to: &batch)
        addOutbox(to: &batch)
        let returned = try await batch.run(sql: sql)
        return planned.isEmpty ? [] : try writtenPushes(returned)
    }

    private func addNotifications(to batch: inout SQLWriteBatch) {
        var inserted = SQLRowSet(
            [
                ("user_id", .text), ("id", .text), ("occurred_at", .int), ("read", .bool), ("seen", .bool),
                ("event_json", .text),
            ])
        var updated = SQLRowSet([("user_id", .text), ("id", .text), ("read", .bool), ("seen", .bool)])
        for (user, rows) in notifications.sorted(by: { $0.key < $1.key }) {
            for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
                if row.isNew {
                    inserted.append([
                        .text(user), .text(id), .int(row.occurredAt), .bool(row.read), .bool(row.seen),
                        row.eventJSON.map(SQLValue.text) ?? .null,
                    ])
                } else if row.changed {
                    updated.append([.text(user), .text(id), .bool(row.read), .bool(row.seen)])
                }
            }
        }
        // `stored_at`: the database's now, the order in which the app's stream announces new notifications.
        let now = FleetQueries.statementNow(sql.dialect)
        batch.add(inserted) {
            "INSERT INTO notifications (user_id, id, occurred_at, read, seen, event_json, stored_at) "
                + "SELECT user_id, id, occurred_at, read, seen, event_json, \(now) FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, id) DO NOTHING"
        }
        batch.add(updated) {
            "UPDATE notifications SET read = s.read, seen = s.seen FROM \($0) "
                + "WHERE notifications.user_id = s.user_id AND notifications.id = s.id"
        }
    }

    private func addTombstones(to batch: inout SQLWriteBatch) {
        var removed = SQLRowSet([("user_id", .text), ("id", .text)])
        for key in tombstonesRemoved.sorted(by: Self.userItemOrder) {
            removed.append([.text(key.user), .text(key.item)])
        }
        var added = SQLRowSet([("user_id", .text), ("id", .text)])
        for key in tombstonesAdded.sorted(by: Self.userItemOrder) {
            added.append([.text(key.user), .text(key.item)])
        }
        // The users first, as an index condition (see `SQLDialect.among`): a generic plan made while the table was
        // empty would otherwise scan every tombstone for each batch that removes one.
        let dialect = sql.dialect
        batch.add(removed) {
            "DELETE FROM read_tombstones WHERE \(dialect.among("user_id", "SELECT user_id FROM \($0)")) "
                + "AND (user_id, notification_id) IN (SELECT user_id, id FROM \($0))"
        }
        batch.add(added) {
            "INSERT INTO read_tombstones (user_id, notification_id, created_at) "
                + "SELECT user_id, id, \(FleetQueries.statementNow(dialect)) FROM \($0) "
                + "WHERE true "
                + "ON CONFLICT (user_id, notification_id) DO NOTHING"
        }
    }

    private func addMessages(to batch: inout SQLWriteBatch) {
        var inserted = SQLRowSet(
            [
                ("user_id", .text), ("event_id", .text), ("conversation_id", .text), ("occurred_at", .int),
                ("read", .bool),
            ])
        var updated = SQLRowSet([("user_id", .text), ("event_id", .text)])
        for (key, rows) in messages.sorted(by: { Self.userItemOrder($0.key, $1.key) }) {
            for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
                if row.isNew {
                    inserted.append(
                        [.text(key.user), .text(id), .text(key.item), .int(row.occurredAt), .bool(row.read)])
                } else if row.changed {
                    updated.append([.text(key.user), .text(id)])
                }
            }
        }
        batch.add(inserted) {
            "INSERT INTO messages (user_id, event_id, conversation_id, occurred_at, read) "
                + "SELECT user_id, event_id, conversation_id, occurred_at, read FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, event_id) DO NOTHING"
        }
        batch.add(updated) {
            "UPDATE messages SET read = TRUE FROM \($0) "
                + "WHERE messages.user_id = s.user_id AND messages.event_id = s.event_id"
        }
    }

    private func addWatermarks(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet([("user_id", .text), ("conversation_id", .text), ("read_until", .int)])
        for key in changedWatermarks.sorted(by: Self.userItemOrder) {
            guard let until = watermarks[key] else { continue }
            set.append([.text(key.user), .text(key.item), .int(until)])
        }
        batch.add(set) {
            "INSERT INTO conversation_watermarks (user_id, conversation_id, read_until) "
                + "SELECT user_id, conversation_id, read_until FROM \($0) WHERE true "
                + "ON CONFLICT (user_id, conversation_id) DO UPDATE SET read_until = excluded.read_until "
                + "WHERE conversation_watermarks.read_until < excluded.read_until"
        }
    }

    /// Upserts every device the batch touched with its final state. A token that moved to another user starts
    /// its `pushed_version` again (-1); otherwise the stored one is kept: rows that keep it carry the marker -2,
    /// which never reaches the table (such rows exist, so they always take the `DO UPDATE` path).
    private func addDevices(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet(
            [
                ("token", .text), ("user_id", .text), ("provider", .text), ("topic", .text), ("environment", .text),
                ("active", .bool), ("pushed_version", .int), ("registered_at", .int), ("app", .text),
            ])
        for (token, row) in devices.sorted(by: { $0.key < $1.key }) where row.touched {
            set.append([
                .text(token), .text(row.user), .text(row.device.provider.rawValue), .text(row.device.topic),
                .text(row.device.environment?.rawValue), .bool(row.active), .int(row.stored && !row.moved ? -2 : -1),
                .int(row.registeredAt), .text(row.device.app),
            ])
        }
        batch.add(set) {
            "INSERT INTO devices (token, user_id, provider, topic, environment, active, pushed_version, "
                + "registered_at, app) SELECT token, user_id, provider, topic, environment, active, pushed_version, "
                + "registered_at, app FROM \($0) "
                + "WHERE true ORDER BY token ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, "
                + "provider = excluded.provider, topic = excluded.topic, environment = excluded.environment, "
                + "active = excluded.active, registered_at = excluded.registered_at, app = excluded.app, "
                + "pushed_version = CASE WHEN excluded.pushed_version = -2 "
                + "THEN devices.pushed_version ELSE -1 END"
        }
    }

    private func addUsers(to batch: inout SQLWriteBatch) {
        var set = SQLRowSet(
            [
                ("user_id", .text), ("unread_notifications", .int), ("unseen_notifications", .int),
                ("unread_messages", .int), ("badge_version", .int), ("badge_enabled", .bool), ("previews", .bool),
                ("read_all_until", .int), ("opened_until", .int),
            ])
        for (id, user) in users.sorted(by: { $0.key < $1.key }) where loadedUsers[id] != user {
            set.append([
                .text(id), .int(user.unreadNotifications), .int(user.unseenNotifications), .int(user.unreadMessages),
                .int(user.badgeVersion), .bool(user.badgeEnabled), .bool(user.previews), .int(user.readAllUntil),
                .int(user.openedUntil),
            ])
        }
        batch.add(set) {
            """
            UPDATE users SET unread_notifications = s.unread_notifications,
                unseen_notifications = s.unseen_notifications, unread_messages = s.unread_messages,
                badge_version = s.badge_version, badge_enabled = s.badge_enabled, previews = s.previews,
                read_all_until = s.read_all_until, opened_until = s.opened_until
            FROM \($0) WHERE users.user_id = s.user_id
            """
        }
    }

    static func userItemOrder(_ lhs: UserItem, _ rhs: UserItem) -> Bool {
        (lhs.user, lhs.item) < (rhs.user, rhs.item)
    }
}

extension EventRules {
    /// One row of ``planned`` as the outbox insert returned it.
    struct WrittenPush: Equatable {
        var id: Int64
        /// When it was planned: the database's now in the insert.
        var createdAt: Int64
    }

    /// Adds `planned` to `batch` as its last parts: the events of its alerts, each once (``OutboxEvents``), then the
    /// outbox insert, whose `RETURNING` ``writtenPushes(_:)`` reads. `created_at` is the database's now. Nothing is
    /// claimed here: the partition's delivery stage claims every push (`DeliveryQueries.claimDue`).
    func addOutbox(to batch: inout SQLWriteBatch) {
        // One row per event with an alert planned, however many devices it goes to. An event id is planned once
        // (`processed_events`): a row already there is that event's, left by a first copy older than the retention
        // whose pushes still wait.
        let now = FleetQueries.statementNow(sql.dialect)
        var events = SQLRowSet([("event_id", .text), ("event_json", .text)])
        var written = Set<String>()
        for push in planned where push.kind.isAlert && !written.contains(push.eventID) {
            guard let json = eventJSON[push.eventID] else { continue }
            written.insert(push.eventID)
            events.append([.text(push.eventID), .text(json)])
        }
        batch.add(events) {
            "INSERT INTO outbox_events (event_id, event_json, created_at) SELECT event_id, event_json, \(now) "
                + "FROM \($0) WHERE true ON CONFLICT (event_id) DO NOTHING"
        }
        var set = OutboxRow.rowSet()
        for (push, pushPartition) in zip(planned, plannedPartitions) {
            set.append(OutboxRow.values(of: push, partition: pushPartition))
        }
        batch.add(set) {
            "INSERT INTO outbox (\(OutboxRow.insertColumns)) SELECT \(OutboxRow.valueColumns), \(now) FROM \($0) "
                + "WHERE true ORDER BY ord RETURNING id, event_id, token, created_at"
        }
    }

    /// The outbox rows of `planned` (ids increasing in planning order) from the outbox insert's `returned` rows.
    func writtenPushes(_ returned: [SQLRow]) throws -> [WrittenPush] {
        var byKey: [String: WrittenPush] = [:]
        for row in returned {
            guard let id = try row["id"].int64, let eventID = try row["event_id"].string,
                let token = try row["token"].string
            else { throw StoreError.corrupt("bad outbox RETURNING row") }
            byKey[eventID + " " + token] = WrittenPush(id: id, createdAt: try row["created_at"].int64 ?? 0)
        }
        var rows: [WrittenPush] = []
        rows.reserveCapacity(planned.count)
        for push in planned {
            guard let row = byKey[push.eventID + " " + push.token] else {
                throw StoreError.corrupt("outbox id missing for a push")
            }
            // Both databases number the rows of an ordered INSERT … SELECT in order; the outbox order relies on it.
            guard row.id > (rows.last?.id ?? .min) else { throw StoreError.corrupt("outbox ids out of planning order") }
            rows.append(row)
        }
        return rows
    }
}
