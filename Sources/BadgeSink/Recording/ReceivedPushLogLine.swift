import BadgeWire
import Foundation

/// The one-line summary of a recorded push printed when `logDeliveries` is set, such as
/// `push seq=3 apns aaaa0000…0000 type=follow badge=1 version=2 status=200 title="New follower"`.
///
/// Every field a client sent (the token, `type`, the title) or a fault set (`reason`) goes through ``field(_:)``:
/// a push cannot write a second line, a fake field or a terminal escape into the log.
enum ReceivedPushLogLine {
    /// The summary of a push: type, badge, `badge_version` and alert title are read from the APNs payload,
    /// or from FCM's `message.apns.payload`; those missing are left out.
    static func make<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) -> String {
        var line = "push seq=\(answer.seq) \(answer.provider.rawValue) \(Self.field(Self.abbreviate(token)))"
        if let summary = PushPayloadSummary(body: body, provider: answer.provider) {
            if let type = summary.type {
                line += " type=\(Self.field(type))"
            }
            if let badge = summary.badge {
                line += " badge=\(badge)"
            }
            if let version = summary.badgeVersion {
                line += " version=\(version)"
            }
            line += " status=\(answer.status)"
            if let reason = answer.reason {
                line += " reason=\(Self.field(reason))"
            }
            if let title = summary.alertTitle {
                line += " title=\(Self.quoted(title))"
            }
        } else {
            line += " status=\(answer.status)"
            if let reason = answer.reason {
                line += " reason=\(Self.field(reason))"
            }
        }
        return line
    }

    /// Writes the summary of a push and a newline to standard output, unbuffered.
    static func print<Bytes: Collection<UInt8>>(answer: PushAnswer, token: String, body: Bytes) {
        let line = Self.make(answer: answer, token: token, body: body) + "\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }

    /// `text` as it is when every character is printable ASCII other than a space, `"`, the backslash and `=` (or
    /// the ellipsis of an abbreviated token), else ``quoted(_:)``.
    static func field(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy { scalar in
                scalar == "…" || ((0x21...0x7E).contains(scalar.value) && !"\"\\=".unicodeScalars.contains(scalar))
            }
        return plain ? text : quoted(text)
    }

    /// `text` in double quotes, with `"` and the backslash escaped and every character that is not printable
    /// written as a `\uXXXX` escape (`\u{XXXXX}` above U+FFFF): control characters (newlines, ESC), format
    /// characters (bidirectional overrides), line and paragraph separators.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                switch scalar.properties.generalCategory {
                case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out +=
                        scalar.value <= 0xFFFF
                        ? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex : "\\u{\(hex)}"
                default:
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// The first 8 and last 4 characters of a long token, joined by an ellipsis.
    static func abbreviate(_ token: String) -> String {
        guard token.count > 13 else { return token.isEmpty ? "-" : token }
        return "\(token.prefix(8))…\(token.suffix(4))"
    }
}
