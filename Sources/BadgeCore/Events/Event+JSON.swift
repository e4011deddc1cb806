import BadgeWire

extension Event {
    /// The event in contract form, members in schema order. Timestamps are written as UTC RFC 3339
    /// (``Timestamp/rfc3339``); absent optional fields and an empty `notification_ids` are omitted.
    /// ``EventDecoder`` reads the result back to an equal event.
    public func jsonObject() -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            (key: "id", value: .string(id)),
            (key: "type", value: .string(type.rawValue)),
            (key: "recipient", value: .string(recipient)),
            (key: "occurred_at", value: .string(occurredAt.rfc3339)),
        ]
        func add(_ key: String, _ value: String?) {
            if let value { members.append((key: key, value: .string(value))) }
        }
        if let actor {
            var actorMembers: [(key: String, value: JSONValue)] = [
                (key: "id", value: .string(actor.id)), (key: "name", value: .string(actor.name)),
            ]
            if let username = actor.username { actorMembers.append((key: "username", value: .string(username))) }
            members.append((key: "actor", value: .object(actorMembers)))
        }
        add("post_id", postID)
        add("comment_id", commentID)
        add("conversation_id", conversationID)
        add("message_id", messageID)
        add("title", title)
        add("text", text)
        add("until", until?.rfc3339)
        if !notificationIDs.isEmpty {
            members.append((key: "notification_ids", value: .array(notificationIDs.map { .string($0) })))
        }
        if let device {
            var deviceMembers: [(key: String, value: JSONValue)] = [(key: "token", value: .string(device.token))]
            if let provider = device.provider {
                deviceMembers.append((key: "provider", value: .string(provider.rawValue)))
            }
            if let topic = device.topic { deviceMembers.append((key: "topic", value: .string(topic))) }
            if let environment = device.environment {
                deviceMembers.append((key: "environment", value: .string(environment.rawValue)))
            }
            members.append((key: "device", value: .object(deviceMembers)))
        }
        if let preferences {
            var preferenceMembers: [(key: String, value: JSONValue)] = []
            if let badgeEnabled = preferences.badgeEnabled {
                preferenceMembers.append((key: "badge_enabled", value: .bool(badgeEnabled)))
            }
            if let previews = preferences.previews {
                preferenceMembers.append((key: "previews", value: .bool(previews)))
            }
            members.append((key: "preferences", value: .object(preferenceMembers)))
        }
        return .object(members)
    }

    /// ``jsonObject()`` serialised as compact UTF-8 JSON, ready to publish.
    public func jsonData() -> [UInt8] {
        jsonObject().serialized()
    }
}
