import BadgeWire
import Foundation

/// The one-line summary of a recorded push printed when `logDeliveries` is set, such as
/// `push seq=3 apns aaaa0000…0000 type=follow badge=1 version=2 status=200 title="New follower"`.
enum ReceivedPushLogLine {
    /// The summary of a push: type, badge, `badge_version` and alert title are read from the APNs payload,
    /// or from FCM's `message.apns.payload`; those missing are left out.
    static func make<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) -> String {
        var line = "push seq=\(answer.seq) \(answer.provider.rawValue) \(Self.abbreviate(token))"
        if let summary = PushPayloadSummary(body: body, provider: answer.provider) {
            if let type = summary.type {
                line += " type=\(type)"
            }
            if let badge = summary.badge {
                line += " badge=\(badge)"
            }
            if let version = summary.badgeVersion {
                line += " version=\(version)"
            }
            line += " status=\(answer.status)"
            if let reason = answer.reason {
                line += " reason=\(reason)"
            }
            if let title = summary.alertTitle {
                line += " title=\(JSONValue.string(title).serializedString())"
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
}
