import BadgeCore
import BadgeWire
import Foundation

/// The one-line summary of a recorded push printed when `logDeliveries` is set, such as
/// `push seq=3 apns aaaa0000…0000 type=follow badge=1 version=2 status=200 title="New follower"`.
enum DeliveryLogLine {
    /// The summary of a push: type, badge, `badge_version` and alert title are read from the APNs payload,
    /// or from FCM's `message.apns.payload`; those missing are left out.
    static func make<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) -> String {
        var line = "push seq=\(answer.seq) \(answer.provider.rawValue) \(Self.abbreviate(token))"
        if let payload = Self.payload(of: body, provider: answer.provider) {
            let aps = payload["aps"] as? [String: Any]
            if let type = payload["type"] as? String {
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
            if let alert = aps?["alert"] as? [String: Any], let title = alert["title"] as? String {
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

    private static func payload<Bytes: Collection<UInt8>>(of body: Bytes, provider: PushProvider) -> [String: Any]? {
        guard let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        switch provider {
        case .apns:
            return root
        case .fcm:
            let message = root["message"] as? [String: Any]
            let apns = message?["apns"] as? [String: Any]
            return apns?["payload"] as? [String: Any]
        }
    }

    private static func integer(_ value: Any?) -> Int? {
        if let value = value as? Int {
            return value
        }
        if let value = value as? String {
            return Int(value)
        }
        return nil
    }

    private static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
