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

/// The events of alert pushes, stored once per event and read once per event.
///
/// **Stored once.** An alert to a user's 100 devices is 100 outbox rows, and each alert carries its event (the
/// payload's text comes from it: up to the contract's 64 KiB). The event's JSON lives in `outbox_events` (one row
/// per event id, written by the ingestion transaction that plans the alert, `ON CONFLICT DO NOTHING`); the outbox
/// rows name it by `event_id` and leave their own `event_json` NULL. Rows planned before this table existed carry
/// their event in `event_json` and are read from it until they are gone.
///
/// **Deleted with the event's last alert row.** A trigger on the outbox (``releaseTrigger(_:)``) deletes an event's
/// row in the statement that deletes the last alert row naming it, whatever the path: a push sent, given up,
/// rejected, superseded, to a dead or deactivated token, or moved aside into `refused_pushes`. On PostgreSQL it first
/// locks the events' rows, in event id order, and only then looks for rows left: of two transactions deleting an
/// event's last two rows at once, the second waits for the first and sees its deletion, so the event's row is
/// never left behind with no row naming it.
///
/// **Read once.** A claim reads each distinct event of its rows once (in its own statement on PostgreSQL, on the
/// first row of each event; elsewhere with one more set-based read, ``read(for:sql:)``) and decodes it once: every
/// push of that event shares the decoded event, so a round of 256 pushes of one 40 KB event holds one copy of it.
struct OutboxEvents {
    /// The JSON text of each event named by the rows being read, by event id.
    private(set) var texts: [String: String]
    /// Each event of ``texts`` decoded, once it was asked for.
    private var decoded: [String: Result<Event, OutboxRow.Unreadable>] = [:]
    /// Events of rows that carry their own `event_json` (planned before `outbox_events`), by event id, with the text
    /// they were decoded from.
    private var carried: [String: (text: String, event: Result<Event, OutboxRow.Unreadable>)] = [:]

    /// The events `texts` (event id → JSON), none decoded yet.
    init(texts: [String: String] = [:]) {
        self.texts = texts
    }

    /// The event of the alert row of `eventID` whose own `event_json` is `carriedJSON`: that text when the row has
    /// one, else the event's shared row. ``OutboxRow/Unreadable`` when there is neither, or the text is not a valid
    /// event. Each text is decoded once, however many rows ask.
    mutating func event(_ eventID: String, carriedJSON: String?) throws(OutboxRow.Unreadable) -> Event {
        if let carriedJSON {
            if let known = carried[eventID], known.text == carriedJSON { return try known.event.get() }
            let result = Self.decode(carriedJSON)
            carried[eventID] = (carriedJSON, result)
            return try result.get()
        }
        if let known = decoded[eventID] { return try known.get() }
        guard let text = texts[eventID] else {
            throw OutboxRow.Unreadable(
                code: .missingValue,
                message: "the alert's event \(JSONValue.quotedForMessage(eventID)) is not in outbox_events")
        }
        let result = Self.decode(text)
        decoded[eventID] = result
        return try result.get()
    }

    /// The events named by `rows` (outbox rows with `event_id`, `kind` and `event_json`): one statement reading each
    /// distinct event of the alert rows without their own `event_json` once; nothing when there are none.
    static func read(for rows: [SQLRow], sql: any SQLExecutor) async throws -> OutboxEvents {
        var wanted = Set<String>()
        for row in rows {
            guard try row["kind"].string == "alert", try row["event_json"].isNull,
                let eventID = try row["event_id"].string
            else { continue }
            wanted.insert(eventID)
        }
        guard !wanted.isEmpty else { return OutboxEvents() }
        var set = SQLRowSet([("event_id", .text)])
        for eventID in wanted.sorted() { set.append([.text(eventID)]) }
        var binds = SQLBinds()
        let source = set.table("s", binds: &binds, dialect: sql.dialect)
        var texts: [String: String] = [:]
        for row in try await sql.query(
            "SELECT event_id, event_json FROM outbox_events WHERE "
                + sql.dialect.among("event_id", "SELECT event_id FROM \(source)"),
            binds.values)
        {
            guard let eventID = try row["event_id"].string, let text = try row["event_json"].string else {
                throw StoreError.corrupt("bad outbox_events row")
            }
            texts[eventID] = text
        }
        return OutboxEvents(texts: texts)
    }

    /// The `SELECT` item of a statement over claimed rows `alias` (with `id`, `event_id`, `kind`, `event_json`) that
    /// carries each event's JSON once, on the first row (by id) of each event whose alert rows lack their own, as
    /// ``sharedColumn``; NULL on every other row. The window's rows are those of the statement: no other join may
    /// repeat them.
    static func sharedItem(rows alias: String) -> String {
        // CASE evaluates the subquery only for the rows that need it.
        "CASE WHEN \(alias).kind = 'alert' AND \(alias).event_json IS NULL AND row_number() OVER (PARTITION BY "
            + "\(alias).event_id, \(alias).kind = 'alert' AND \(alias).event_json IS NULL ORDER BY \(alias).id) = 1 "
            + "THEN (SELECT ev.event_json FROM outbox_events ev WHERE ev.event_id = \(alias).event_id) "
            + "END AS \(sharedColumn)"
    }

    /// The column of ``sharedItem(rows:)``.
    static let sharedColumn = "shared_event_json"

    /// The events a statement with ``sharedItem(rows:)`` returned.
    static func shared(in rows: [SQLRow]) throws -> OutboxEvents {
        var texts: [String: String] = [:]
        for row in rows {
            guard let text = try row[sharedColumn].string, let eventID = try row["event_id"].string else { continue }
            texts[eventID] = text
        }
        return OutboxEvents(texts: texts)
    }

    /// The trigger that deletes an event's `outbox_events` row with the last alert row of the outbox naming it (see
    /// the type's comment), as migration statements, each safe to run again. PostgreSQL: once per statement over
    /// the rows it deleted (a transition table); SQLite (one writer at a time): once per deleted alert row.
    static func releaseTrigger(_ dialect: SQLDialect) -> [String] {
        switch dialect {
        case .postgres:
            return [
                // `SET search_path FROM CURRENT`: the tables of the schema it was created in, whoever deletes.
                """
                CREATE OR REPLACE FUNCTION outbox_events_release() RETURNS trigger LANGUAGE plpgsql
                SET search_path FROM CURRENT AS $$
                DECLARE
                    events text[];
                BEGIN
                    events := ARRAY(SELECT DISTINCT event_id FROM gone WHERE kind = 'alert' ORDER BY event_id);
                    IF cardinality(events) = 0 THEN
                        RETURN NULL;
                    END IF;
                    -- Locked first, in order; the delete below is a new statement, which sees what a transaction
                    -- that held one of these locks before committed.
                    PERFORM 1 FROM outbox_events WHERE event_id = ANY(events) ORDER BY event_id FOR UPDATE;
                    DELETE FROM outbox_events e WHERE e.event_id = ANY(events)
                        AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.event_id AND o.kind = 'alert'
                            OFFSET 0);
                    RETURN NULL;
                END
                $$
                """,
                "DROP TRIGGER IF EXISTS outbox_events_release ON outbox",
                """
                CREATE TRIGGER outbox_events_release AFTER DELETE ON outbox REFERENCING OLD TABLE AS gone
                FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_release()
                """,
            ]
        case .sqlite:
            return [
                """
                CREATE TRIGGER IF NOT EXISTS outbox_events_release AFTER DELETE ON outbox
                WHEN old.kind = 'alert'
                BEGIN
                    DELETE FROM outbox_events WHERE event_id = old.event_id
                        AND NOT EXISTS (SELECT 1 FROM outbox WHERE event_id = old.event_id AND kind = 'alert');
                END
                """
            ]
        }
    }

    private static func decode(_ text: String) -> Result<Event, OutboxRow.Unreadable> {
        let json: JSONValue
        do {
            json = try JSONValue.parse(text)
        } catch {
            return .failure(OutboxRow.Unreadable(code: .badEvent, message: "the event is not JSON: \(error)"))
        }
        switch EventDecoder.decode(json: json) {
        case .success(let event): return .success(event)
        case .failure(let error):
            return .failure(OutboxRow.Unreadable(code: .badEvent, message: "the event is not valid: \(error)"))
        }
    }
}
