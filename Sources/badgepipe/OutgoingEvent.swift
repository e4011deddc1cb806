import BadgeCore
import BadgeWire

/// An event body with what its AMQP properties need.
struct OutgoingEvent: Sendable {
    var body: [UInt8]
    var id: String
    var recipient: String
    var type: String

    init(event: Event) {
        body = event.jsonData()
        id = event.id
        recipient = event.recipient
        type = event.type.rawValue
    }

    /// From raw JSON, valid or not (publishing invalid events on purpose is how the dead queue is tested).
    init(json: JSONValue) {
        body = json.serialized()
        id = json["id"]?.stringValue ?? ""
        recipient = json["recipient"]?.stringValue ?? ""
        type = json["type"]?.stringValue ?? ""
    }
}
