import BadgeCore
import BadgeWire

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
