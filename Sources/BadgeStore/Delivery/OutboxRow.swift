import BadgeCore
import BadgeWire

/// The outbox's columns and how a ``PlannedPush`` maps to them and back.
enum OutboxRow {
    /// The columns an insert writes from a push's values (``values(of:partition:)``): everything but the time it was
    /// planned, which the database writes (see ``insertColumns``). An alert's event is not among them: it is stored
    /// once per event in `outbox_events` (see ``OutboxEvents``), and the row's own `event_json` stays NULL.
    static let valueColumns =
        "user_id, event_id, event_type, token, provider, topic, environment, kind, "
        + "unread_notifications, unseen_notifications, unread_messages, badge, badge_version, previews, partition_id, "
        + "app"

    /// The columns an insert names: ``valueColumns`` and `created_at`, whose value is the database's now
    /// (``FleetQueries/statementNow(_:)``) after the push's values.
    static let insertColumns = valueColumns + ", created_at"

    /// ``insertColumns`` with the id first, `event_json` (an alert's event, on rows planned before `outbox_events`),
    /// and the delivery state last (claim epoch, attempts, next attempt).
    static let selectColumns = "id, " + insertColumns + ", event_json, claimed_epoch, attempts, next_attempt_at"

    /// ``selectColumns`` (of the table or its alias `alias`) and the row's age by the database's clock, `age`
    /// (``decode(_:events:)`` reads it into ``OutboxPush/age``): what a claim returns.
    static func claimedColumns(_ dialect: SQLDialect, alias: String? = nil) -> String {
        let prefix = alias.map { $0 + "." } ?? ""
        let columns = selectColumns.split(separator: ",").map { prefix + $0.drop(while: { $0 == " " }) }
        return columns.joined(separator: ", ") + ", " + age(dialect, alias: alias)
    }

    /// The `age` column: the database's now less `created_at`, NULL for a row planned before that was recorded.
    static func age(_ dialect: SQLDialect, alias: String? = nil) -> String {
        let created = (alias.map { $0 + "." } ?? "") + "created_at"
        return "CASE WHEN \(created) > 0 THEN \(FleetQueries.statementNow(dialect)) - \(created) END AS age"
    }

    /// An empty row set with the columns of ``valueColumns``, for ``values(of:partition:)`` rows.
    static func rowSet() -> SQLRowSet {
        SQLRowSet(
            [
                ("user_id", .text), ("event_id", .text), ("event_type", .text), ("token", .text), ("provider", .text),
                ("topic", .text), ("environment", .text), ("kind", .text),
                ("unread_notifications", .int), ("unseen_notifications", .int), ("unread_messages", .int),
                ("badge", .int), ("badge_version", .int), ("previews", .bool), ("partition_id", .int), ("app", .text),
            ])
    }

    /// The values of ``valueColumns`` for `push`.
    static func values(of push: PlannedPush, partition: Int?) -> [SQLValue] {
        [
            .text(push.recipient), .text(push.eventID), .text(push.eventType.rawValue), .text(push.token),
            .text(push.provider.rawValue), .text(push.topic), .text(push.environment?.rawValue),
            .text(push.kind.isAlert ? "alert" : "badge"),
            .int(Int64(push.counts.unreadNotifications)), .int(Int64(push.counts.unseenNotifications)),
            .int(Int64(push.counts.unreadMessages)), .int(Int64(push.badge)), .int(push.badgeVersion),
            .bool(push.previews), .int(partition.map(Int64.init)), .text(push.app),
        ]
    }

    /// Why a row cannot be read (see ``RefusedPush``).
    struct Unreadable: Error, Sendable, CustomStringConvertible {
        /// The refusal's reason is the error's code (the same struct shape as every error's `Code`).
        typealias Code = RefusedPush.Reason

        /// Why, as the refused row's `reason`.
        var code: Code
        /// What exactly could not be read, in a sentence: the refused row's `detail`.
        var message: String

        /// `code: message`.
        var description: String { "\(code): \(message)" }
    }

    /// The names of ``selectColumns``: what a refused row's text keeps (a claim's result may carry more columns).
    static let selectedNames = Set(selectColumns.split(separator: ",").map { String($0.drop(while: { $0 == " " })) })

    /// Reads `rows` (with the columns of ``selectColumns``, maybe more) and their alerts' `events`: the pushes, in
    /// the rows' order, and the rows that cannot be read, with why. A column the rows lack is the code's mistake,
    /// not the data's: that throws.
    static func decodeAll(
        _ rows: [SQLRow], events: inout OutboxEvents
    ) throws -> (pushes: [OutboxPush], unreadable: [(row: SQLRow, why: Unreadable)]) {
        var pushes: [OutboxPush] = []
        var unreadable: [(row: SQLRow, why: Unreadable)] = []
        for row in rows {
            do {
                pushes.append(try decode(row, events: &events))
            } catch let why as Unreadable {
                unreadable.append((row, why))
            }
        }
        return (pushes, unreadable)
    }

    /// Rebuilds a push from the columns named in ``selectColumns`` and, for an alert, its event from `events` (each
    /// event decoded once, shared by the pushes of all its rows); throws ``Unreadable`` when the row's data cannot be
    /// read, a ``StoreError`` when a column is missing from the result.
    static func decode(_ row: SQLRow, events: inout OutboxEvents) throws -> OutboxPush {
        let id = try value(row, "id", \.int64)
        let eventTypeName = try value(row, "event_type", \.string)
        guard let eventType = EventType(rawValue: eventTypeName) else {
            throw Unreadable(code: .unknownEventType, message: "unknown event type \(quoted(eventTypeName))")
        }
        let providerName = try value(row, "provider", \.string)
        guard let provider = PushProvider(rawValue: providerName) else {
            throw Unreadable(code: .unknownProvider, message: "unknown provider \(quoted(providerName))")
        }
        let environment: APNsEnvironment?
        if let name = try row["environment"].string {
            guard let value = APNsEnvironment(rawValue: name) else {
                throw Unreadable(code: .unknownEnvironment, message: "unknown environment \(quoted(name))")
            }
            environment = value
        } else {
            environment = nil
        }
        let kind: PushKind
        switch try value(row, "kind", \.string) {
        case "badge":
            kind = .badgeOnly
        case "alert":
            kind = .alert(
                try events.event(try value(row, "event_id", \.string), carriedJSON: try row["event_json"].string))
        case let other:
            throw Unreadable(code: .unknownKind, message: "unknown kind \(quoted(other))")
        }
        let push = PlannedPush(
            recipient: try value(row, "user_id", \.string), eventID: try value(row, "event_id", \.string),
            eventType: eventType, token: try value(row, "token", \.string), provider: provider,
            topic: try row["topic"].string, environment: environment, app: try row["app"].string, kind: kind,
            counts: Counts(
                unreadNotifications: Int(try value(row, "unread_notifications", \.int64)),
                unseenNotifications: Int(try value(row, "unseen_notifications", \.int64)),
                unreadMessages: Int(try value(row, "unread_messages", \.int64))),
            badge: Int(try value(row, "badge", \.int64)), badgeVersion: try value(row, "badge_version", \.int64),
            previews: try value(row, "previews", \.bool))
        // A row read without its age (a listing) has none; a claim's rows have it (``claimedColumns(_:alias:)``).
        let age = row.columns.position(of: "age") == nil ? nil : try row["age"].int64
        return OutboxPush(
            id: id, push: push, claimedEpoch: try row["claimed_epoch"].int64,
            attempts: Int(try row["attempts"].int64 ?? 0), createdAt: try row["created_at"].int64 ?? 0,
            nextAttemptAt: try row["next_attempt_at"].int64 ?? 0, age: age.map { .microseconds(max(0, $0)) })
    }

    /// ``decode(_:events:)`` for readers that only list rows: a row that cannot be read is a `corrupt_data` error (a
    /// claim moves it aside, see ``RefusedPush``).
    static func decodeListed(_ row: SQLRow, events: inout OutboxEvents) throws -> OutboxPush {
        do {
            return try decode(row, events: &events)
        } catch let why as Unreadable {
            throw StoreError.corrupt("outbox row \((try? row["id"].int64).flatMap { $0 } ?? -1): \(why.message)")
        }
    }

    /// Every column of ``selectColumns`` of `row`, as a JSON object, for `refused_pushes`; an alert row without its
    /// own `event_json` gets its event's text from `events` there, when there is one (the event's row goes with the
    /// event's last row in the outbox).
    static func text(of row: SQLRow, events: OutboxEvents) -> String {
        var members: [(key: String, value: JSONValue)] = []
        let isAlert = (try? row["kind"].string) == "alert"
        let shared = isAlert ? (try? row["event_id"].string).flatMap { $0 }.flatMap { events.texts[$0] } : nil
        for (name, value) in zip(row.columns.names, row.values) where selectedNames.contains(name) {
            switch value {
            case .null where name == "event_json" && shared != nil: members.append((name, .string(shared ?? "")))
            case .null: members.append((name, .null))
            case .int(let number): members.append((name, .int(number)))
            case .bool(let flag): members.append((name, .bool(flag)))
            case .text(let text): members.append((name, .string(text)))
            }
        }
        return JSONValue.object(members).serializedString()
    }

    /// Column `name` of `row` read by `read`; ``Unreadable`` when it is NULL or not of that type.
    private static func value<T>(_ row: SQLRow, _ name: String, _ read: (SQLValue) -> T?) throws -> T {
        let value = try row[name]
        guard let result = read(value) else {
            throw value.isNull
                ? Unreadable(code: .missingValue, message: "\(name) is NULL")
                : Unreadable(code: .badValue, message: "\(name) is not readable (\(value))")
        }
        return result
    }

    /// A stored name as it appears in a reason: quoted, at most 64 characters.
    private static func quoted(_ text: String) -> String {
        JSONValue.quotedForMessage(text)
    }
}
