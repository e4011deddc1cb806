import Foundation

/// Every setting is a flag and an environment variable; the flag wins, then the variable, then the default.
///
/// swift-configuration (1.4, among the local mirrors) was considered and not adopted: ArgumentParser already owns
/// the flags, and what is left here is one environment lookup plus range checks whose errors name both the flag and
/// the variable. A provider stack for that would add a package to every build for about fifteen lines.
enum Settings {
    /// A setting with a default: the flag, else the variable when set and not empty, else `fallback`.
    static func value(_ flag: String?, _ variable: String, default fallback: String) -> String {
        optional(flag, variable) ?? fallback
    }

    /// The value of an optional setting: the flag, else the variable when set and not empty, else nil.
    static func optional(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        return nil
    }

    /// An integer setting: the flag, else the variable, else `fallback`; a value that is not an integer, or is out
    /// of `range`, is an error naming the setting (never a silent default).
    static func integer(
        _ flag: Int?, _ variable: String, name: String, default fallback: Int, range: ClosedRange<Int>
    ) throws -> Int {
        var number = fallback
        if let flag {
            number = flag
        } else if let text = optional(nil, variable) {
            guard let parsed = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw CommandError(code: .invalidSetting, message: "\(variable) must be an integer, not \"\(text)\"")
            }
            number = parsed
        }
        guard range.contains(number) else {
            let bound = range.upperBound == .max ? "at least \(range.lowerBound)" : "within \(range)"
            throw CommandError(
                code: .invalidSetting, message: "\(name) (\(variable)) must be \(bound), not \(number)")
        }
        return number
    }
}

/// A command-line failure with a one-line message.
struct CommandError: Error, Sendable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is stable (an invalid event's code is the decoder's).
    struct Code: Hashable, Sendable, CustomStringConvertible {
        let rawValue: String

        init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        var description: String { rawValue }

        /// A file cannot be opened, or is neither a JSON event nor NDJSON.
        static let badFile = Code("bad_file")
        /// A load scenario cannot be used.
        static let badScenario = Code("bad_scenario")
        /// A time is not RFC 3339.
        static let badTime = Code("bad_time")
        /// An option's value cannot be used.
        static let badValue = Code("bad_value")
        /// The apps file is not valid.
        static let invalidAppsFile = Code("invalid_apps_file")
        /// A provider credential cannot be loaded.
        static let invalidCredentials = Code("invalid_credentials")
        /// The badge policy is neither `unseen` nor `unread`.
        static let invalidPolicy = Code("invalid_policy")
        /// A setting is out of its range or malformed.
        static let invalidSetting = Code("invalid_setting")
        /// An event names no recipient.
        static let missingRecipient = Code("missing_recipient")
        /// An event has no type.
        static let missingType = Code("missing_type")
        /// The events exchange does not exist.
        static let noExchange = Code("no_exchange")
        /// What was asked for does not exist.
        static let notFound = Code("not_found")
        /// The sink answered with an error.
        static let sinkError = Code("sink_error")
        /// The sink could not be reached.
        static let sinkUnreachable = Code("sink_unreachable")
        /// A file cannot be read.
        static let unreadableFile = Code("unreadable_file")
    }

    var code: Code
    var message: String
    /// The message alone: the command prints it as it is.
    var description: String { message }
}
