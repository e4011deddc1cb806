import AMQPClient
import BadgeWire
import BadgeWorker
import Foundation

/// How `badgepipe dead` prints parked messages: a table row, an NDJSON line, and the detail of `show`.
struct ParkedRow {
    var position: Int
    var id: String
    var type: String
    var reason: String
    var parkedAt: String
    var error: String
    var json: JSONValue

    init(_ message: ParkedMessage) {
        position = message.position
        id = message.displayID
        type = message.eventType ?? "-"
        reason = message.reason
        parkedAt = message.parkedAt?.rfc3339Milliseconds ?? "-"
        error = message.error ?? "-"
        json = .object([
            ("position", .int(Int64(message.position))),
            ("message_id", message.messageID.map(JSONValue.string) ?? .null),
            ("event_id", message.eventID.map(JSONValue.string) ?? .null),
            ("type", message.eventType.map(JSONValue.string) ?? .null),
            ("reason", .string(message.reason)),
            ("error", message.error.map(JSONValue.string) ?? .null),
            ("parked_at", message.parkedAt.map { .string($0.rfc3339Milliseconds) } ?? .null),
            ("routing_key", message.originalRoutingKey.map(JSONValue.string) ?? .null),
            ("delivery_count", message.deliveryCount.map { .int(Int64($0)) } ?? .null),
            ("size", .int(Int64(message.body.count))),
        ])
    }

    /// The rows as an aligned table with a header line; empty without rows. Long cells are cut with `…`.
    static func table(_ rows: [ParkedRow]) -> String {
        guard !rows.isEmpty else { return "" }
        let header = ["POS", "MESSAGE ID", "TYPE", "REASON", "PARKED AT", "ERROR"]
        let limits = [8, 40, 28, 24, 24, 100]
        let cells = [header] + rows.map { [String($0.position), $0.id, $0.type, $0.reason, $0.parkedAt, $0.error] }
        let clipped = cells.map { line in zip(line, limits).map { cut($0, to: $1) } }
        let widths = (0..<header.count).map { column in clipped.map { $0[column].count }.max() ?? 0 }
        var out = ""
        for line in clipped {
            var text = ""
            for (column, cell) in line.enumerated() {
                let last = column == line.count - 1
                text += last ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            out += text + "\n"
        }
        return out
    }

    private static func cut(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    // MARK: show

    /// Everything about one message, for people: what it is, its properties, its headers and its body (JSON
    /// indented).
    static func detail(_ message: ParkedMessage) -> String {
        let row = ParkedRow(message)
        var out = ""
        func line(_ name: String, _ value: String) {
            out += name + String(repeating: " ", count: max(1, 14 - name.count)) + value + "\n"
        }
        line("position", String(message.position))
        line("message id", message.messageID ?? "-")
        line("event id", message.eventID ?? "-")
        line("type", row.type)
        line("reason", row.reason)
        line("error", row.error)
        line("parked at", row.parkedAt)
        line("routing key", message.originalRoutingKey ?? "- (unknown: replay leaves it)")
        if let count = message.deliveryCount { line("deliveries", String(count)) }
        out += "properties\n"
        for (name, value) in properties(message.properties) { out += "  \(name): \(value.serializedString())\n" }
        out += "headers\n"
        for (name, value) in (message.properties.headers ?? [:]).sorted(by: { $0.key < $1.key }) {
            out += "  \(name): \(headerJSON(value).serializedString())\n"
        }
        switch body(message.body) {
        case .json(let value):
            out += "body (\(message.body.count) bytes, JSON)\n" + pretty(value) + "\n"
        case .text(let text):
            out += "body (\(message.body.count) bytes, text)\n" + text + "\n"
        case .binary:
            let shown = message.body.prefix(256).map { String(format: "%02x", $0) }.joined(separator: " ")
            let more = message.body.count > 256 ? " …" : ""
            out += "body (\(message.body.count) bytes, not UTF-8)\n" + shown + more + "\n"
        }
        return out
    }

    /// Everything about one message as one JSON object: the row's fields, `properties`, `headers`, and the body as
    /// `body` (when it is JSON), `body_text` (other UTF-8) or `body_base64`.
    static func detailJSON(_ message: ParkedMessage) -> JSONValue {
        guard case .object(var members) = ParkedRow(message).json else { return .null }
        members.append(("properties", .object(properties(message.properties))))
        let headers = (message.properties.headers ?? [:]).sorted(by: { $0.key < $1.key })
        members.append(("headers", .object(headers.map { ($0.key, headerJSON($0.value)) })))
        switch body(message.body) {
        case .json(let value): members.append(("body", value))
        case .text(let text): members.append(("body_text", .string(text)))
        case .binary: members.append(("body_base64", .string(Data(message.body).base64EncodedString())))
        }
        return .object(members)
    }

    private enum Body {
        case json(JSONValue)
        case text(String)
        case binary
    }

    private static func body(_ bytes: [UInt8]) -> Body {
        if let value = try? JSONValue.parse(bytes) { return .json(value) }
        if let text = String(validating: bytes, as: UTF8.self) { return .text(text) }
        return .binary
    }

    /// The basic properties that are set, by their AMQP names, except the headers.
    private static func properties(_ properties: AMQPProperties) -> [(key: String, value: JSONValue)] {
        var members: [(key: String, value: JSONValue)] = []
        func add(_ name: String, _ value: String?) { if let value { members.append((name, .string(value))) } }
        add("content_type", properties.contentType)
        add("content_encoding", properties.contentEncoding)
        if let mode = properties.deliveryMode { members.append(("delivery_mode", .int(Int64(mode.rawValue)))) }
        if let priority = properties.priority { members.append(("priority", .int(Int64(priority)))) }
        add("correlation_id", properties.correlationID)
        add("reply_to", properties.replyTo)
        add("expiration", properties.expiration)
        add("message_id", properties.messageID)
        if let timestamp = properties.timestamp, let seconds = Int64(exactly: timestamp) {
            members.append(("timestamp", .string(Timestamp(microsecondsSinceEpoch: seconds * 1_000_000).rfc3339)))
        }
        add("type", properties.type)
        add("user_id", properties.userID)
        add("app_id", properties.appID)
        return members
    }

    /// A header value as JSON: tables as objects (sorted by name), AMQP timestamps as RFC 3339, bytes as a string
    /// when they are UTF-8 (else hexadecimal).
    static func headerJSON(_ value: AMQPFieldValue) -> JSONValue {
        switch value {
        case .bool(let value): return .bool(value)
        case .int8(let value): return .int(Int64(value))
        case .uint8(let value): return .int(Int64(value))
        case .int16(let value): return .int(Int64(value))
        case .uint16(let value): return .int(Int64(value))
        case .int32(let value): return .int(Int64(value))
        case .uint32(let value): return .int(Int64(value))
        case .int64(let value): return .int(value)
        case .uint64(let value): return Int64(exactly: value).map(JSONValue.int) ?? .number(Double(value))
        case .float(let value): return .number(Double(value))
        case .double(let value): return .number(value)
        case .decimal(let scale, let value): return .number(Double(value) / pow(10, Double(scale)))
        case .string(let value): return .string(value)
        case .bytes(let value):
            return .string(
                String(validating: value, as: UTF8.self) ?? value.map { String(format: "%02x", $0) }.joined())
        case .timestamp(let seconds):
            guard let seconds = Int64(exactly: seconds) else { return .int(Int64.max) }
            return .string(Timestamp(microsecondsSinceEpoch: seconds * 1_000_000).rfc3339)
        case .table(let table):
            return .object(table.sorted(by: { $0.key < $1.key }).map { ($0.key, headerJSON($0.value)) })
        case .array(let values): return .array(values.map(headerJSON))
        case .void: return .null
        }
    }

    /// JSON indented by two spaces, members in their order.
    static func pretty(_ value: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch value {
        case .array(let values) where !values.isEmpty:
            return "[\n" + values.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members) where !members.isEmpty:
            let lines = members.map { member in
                inner + JSONValue.string(member.key).serializedString() + ": " + pretty(member.value, indent: inner)
            }
            return "{\n" + lines.joined(separator: ",\n") + "\n\(indent)}"
        default:
            return value.serializedString()
        }
    }
}

/// Writes `line` and a line break to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
