import ArgumentParser
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

/// An integer setting, written once: its flag, its environment variable, its default, its bounds and what it is for.
/// The option's help is made from it, and so is its value (the flag, else the variable, else the default); see
/// ``WorkerSettings``.
struct IntegerSetting: Sendable {
    /// The long flag without its dashes (`batch-size`); nil for a setting that is a variable only.
    var flag: String?
    /// The environment variable (`BADGEPIPE_BATCH_SIZE`).
    var variable: String
    /// The value when neither the flag nor the variable is given; nil when there is none (the setting is optional:
    /// read it with ``optional(_:)``).
    var defaultValue: Int?
    /// The values allowed; any other is refused at start, naming the setting.
    var range: ClosedRange<Int>
    /// What it is for: the first words of its help.
    var summary: String
    /// What the help says of the default when it is not ``defaultValue`` itself, or when there is none (`off`).
    var defaultText: String? = nil
    /// Said after the default in the help: what a special value means, say.
    var note: String? = nil

    /// How an error names it: the flag, or the variable for a variable-only setting.
    var name: String { flag.map { "--\($0)" } ?? variable }
    /// The option's name for ArgumentParser (only a setting with a flag is declared as an option).
    var optionName: NameSpecification { .customLong(flag ?? variable) }
    /// `summary (VARIABLE, default N; note).`
    var help: ArgumentHelp {
        ArgumentHelp(
            Settings.help(summary, variable: variable, default: defaultText ?? defaultValue.map { "\($0)" }, note: note)
        )
    }

    /// The flag's value if given, else the variable's, else the default; out of ``range`` or not an integer is an
    /// error naming the setting.
    func value(_ given: Int?) throws -> Int {
        guard let fallback = defaultValue else {
            preconditionFailure("\(variable) has no default: read it with optional(_:)")
        }
        return try Settings.integer(given, variable, name: name, default: fallback, range: range)
    }

    /// The flag's value if given, else the variable's when set and not empty, else nil; a value given that is out
    /// of ``range`` or not an integer is an error naming the setting.
    func optional(_ given: Int?) throws -> Int? {
        guard given != nil || Settings.optional(nil, variable) != nil else { return nil }
        // Something is given, so the fallback below is never read; any value in range stands in for it.
        return try Settings.integer(given, variable, name: name, default: range.lowerBound, range: range)
    }
}

/// A text setting, written once: its flag, its environment variable, its default (if any) and what it is for.
struct TextSetting: Sendable {
    /// The long flag without its dashes (`database-url`).
    var flag: String
    /// The environment variable (`BADGEPIPE_DATABASE_URL`).
    var variable: String
    /// The value when neither the flag nor the variable is given; nil when there is none (the setting is optional,
    /// or its default follows from other settings: see ``defaultText``).
    var defaultValue: String?
    /// What the help says of the default when it is not ``defaultValue`` itself (one that follows from other
    /// settings).
    var defaultText: String? = nil
    /// What it is for: the first words of its help.
    var summary: String
    /// Said after the default in the help.
    var note: String? = nil
    /// The help's longer explanation, shown below its line.
    var discussion: String = ""

    /// The option's name for ArgumentParser.
    var optionName: NameSpecification { .customLong(flag) }
    /// `summary (VARIABLE, default D; note).`, or `summary (VARIABLE).` without a default.
    var help: ArgumentHelp {
        ArgumentHelp(
            Settings.help(summary, variable: variable, default: defaultText ?? defaultValue, note: note),
            discussion: discussion)
    }

    /// The flag's value if given, else the variable's when set and not empty, else the default.
    func value(_ given: String?) -> String {
        guard let fallback = defaultValue else {
            preconditionFailure("\(variable) has no default: read it with optional(_:)")
        }
        return Settings.optional(given, variable) ?? fallback
    }

    /// The flag's value if given, else the variable's when set and not empty, else nil (the default not applied).
    func optional(_ given: String?) -> String? { Settings.optional(given, variable) }
}

extension Settings {
    /// A setting's help line: `summary (VARIABLE, default D; note).`
    static func help(_ summary: String, variable: String, default text: String?, note: String?) -> String {
        var parenthesis = variable
        if let text { parenthesis += ", default \(text)" }
        if let note { parenthesis += "; \(note)" }
        return "\(summary) (\(parenthesis))."
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
