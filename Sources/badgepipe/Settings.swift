import BadgeSupport
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
    typealias Code = ErrorCode<CommandError>

    var code: Code
    var message: String
    /// The message alone: the command prints it as it is.
    var description: String { message }
}

extension ErrorCode<CommandError> {
    /// A file cannot be opened, or is neither a JSON event nor NDJSON.
    static var badFile: Self { Self("bad_file") }
    /// A load scenario cannot be used.
    static var badScenario: Self { Self("bad_scenario") }
    /// A time is not RFC 3339.
    static var badTime: Self { Self("bad_time") }
    /// An option's value cannot be used.
    static var badValue: Self { Self("bad_value") }
    /// The apps file is not valid.
    static var invalidAppsFile: Self { Self("invalid_apps_file") }
    /// A provider credential cannot be loaded.
    static var invalidCredentials: Self { Self("invalid_credentials") }
    /// The badge policy is neither `unseen` nor `unread`.
    static var invalidPolicy: Self { Self("invalid_policy") }
    /// RabbitMQ's management API could not be read.
    static var managementAPI: Self { Self("management_api") }
    /// A setting is out of its range or malformed.
    static var invalidSetting: Self { Self("invalid_setting") }
    /// An event names no recipient.
    static var missingRecipient: Self { Self("missing_recipient") }
    /// An event has no type.
    static var missingType: Self { Self("missing_type") }
    /// The events exchange does not exist.
    static var noExchange: Self { Self("no_exchange") }
    /// What was asked for does not exist.
    static var notFound: Self { Self("not_found") }
    /// The sink answered with an error.
    static var sinkError: Self { Self("sink_error") }
    /// The sink could not be reached.
    static var sinkUnreachable: Self { Self("sink_unreachable") }
    /// A file cannot be read.
    static var unreadableFile: Self { Self("unreadable_file") }
}
