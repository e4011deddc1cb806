import BadgeWire
import Foundation

/// The one-line summary of a recorded push printed when `logDeliveries` is set, such as
/// `push seq=3 apns aaaa0000…0000 type=follow badge=1 version=2 status=200 title="New follower"`.
enum ReceivedPushLogLine {
    /// The summary of a push: type, badge, `badge_version` and alert title are read from the APNs payload,
    /// or from FCM's `message.apns.payload`; those missing are left out.
    static func make<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) -> String {
        var line = "push seq=\(answer.seq) \(answer.provider.rawValue) \(Self.abbreviate(token))"
        if let payload = Self.payload(of: body, provider: answer.provider) {
            let aps = payload["aps"]
            if let type = payload["type"]?.stringValue {
                line += " type=\(type)"
            }
            if let badge = Self.integer(aps?["badge"]) {
                line += " badge=\(badge)"
            }
            if let version = Self.integer(payload["badge_version"]) {
                line += " version=\(version)"
            }
            line += " status=\(answer.status)"
            if let reason = answer.reason {
                line += " reason=\(reason)"
            }
            if let title = aps?["alert"]?["title"]?.stringValue {
                line += " title=\(Self.quoted(title))"
            }
        } else {
            line += " status=\(answer.status)"
            if let reason = answer.reason {
                line += " reason=\(reason)"
            }
        }
        return line
    }

    /// Writes the summary of a push and a newline to standard output, unbuffered.
    static func print<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) {
        let line = Self.make(answer: answer, token: token, body: body) + "\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }

    /// The first 8 and last 4 characters of a long token, joined by an ellipsis.
    static func abbreviate(_ token: String) -> String {
        guard token.count > 13 else { return token.isEmpty ? "-" : token }
        return "\(token.prefix(8))…\(token.suffix(4))"
    }

    /// The APNs payload object of a push body, or nil when the body is not JSON or has none.
    private static func payload<Bytes: Collection<UInt8>>(of body: Bytes, provider: PushProvider) -> JSONValue? {
        guard let root = try? JSONValue.parse(Array(body)) else { return nil }
        let payload: JSONValue?
        switch provider {
        case .apns:
            payload = root
        case .fcm:
            payload = root["message"]?["apns"]?["payload"]
        }
        return payload?.objectMembers == nil ? nil : payload
    }

    /// An integer, or a string holding one.
    private static func integer(_ value: JSONValue?) -> Int? {
        if let value = value?.int64Value {
            return Int(value)
        }
        if let value = value?.stringValue {
            return Int(value)
        }
        return nil
    }

    private static func quoted(_ text: String) -> String {
        JSONValue.string(text).serializedString()
    }
}
