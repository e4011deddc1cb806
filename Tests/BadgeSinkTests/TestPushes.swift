import Foundation

/// Pushes shaped as the pipeline sends them (contract section 3), for the device and filter tests.
extension SinkRequests {
    /// An APNs alert push with `badge`, `version`, a title, a body and a thread.
    func alert(
        _ token: String, badge: Int, version: Int, title: String, body: String = "body", thread: String = "t",
        type: String = "comment", topic: String = "com.example.app", path: String = "/3/device/"
    ) async throws -> SinkAnswer {
        let payload = """
            {"aps":{"alert":{"title":\(Self.quoted(title)),"body":\(Self.quoted(body))},"badge":\(badge),\
            "sound":"default","thread-id":\(Self.quoted(thread))},"type":\(Self.quoted(type)),\
            "notification_id":"evt-\(version)","event_id":"evt-\(version)","badge_version":\(version),\
            "counts":{"unread_notifications":\(badge),"unseen_notifications":\(badge),"unread_messages":0}}
            """
        return try await self.send(
            "POST", path + token, json: payload,
            headers: [("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10")])
    }

    /// An APNs badge-only push.
    func badgeOnly(
        _ token: String, badge: Int, version: Int, type: String = "notification_read"
    ) async throws
        -> SinkAnswer
    {
        let payload = """
            {"aps":{"badge":\(badge)},"type":\(Self.quoted(type)),"badge_version":\(version),\
            "counts":{"unread_notifications":\(badge),"unseen_notifications":0,"unread_messages":0}}
            """
        return try await self.send(
            "POST", "/3/device/\(token)", json: payload,
            headers: [("apns-topic", "com.example.app"), ("apns-push-type", "alert"), ("apns-collapse-id", "badge")])
    }

    /// An FCM alert whose `message.apns.payload` carries `badge` and a title.
    func fcmAlert(_ token: String, badge: Int, version: Int, title: String) async throws -> SinkAnswer {
        let payload = """
            {"message":{"token":\(Self.quoted(token)),"apns":{"headers":{"apns-topic":"com.example.fcm"},\
            "payload":{"aps":{"alert":{"title":\(Self.quoted(title)),"body":"b"},"badge":\(badge)},\
            "type":"follow","badge_version":\(version)}},"android":{"notification":{"notification_count":\(badge)}},\
            "data":{"type":"follow","badge":"\(badge)","badge_version":"\(version)"}}}
            """
        return try await self.send("POST", "/v1/projects/demo/messages:send", json: payload)
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: text, options: .fragmentsAllowed), as: UTF8.self)
    }
}
