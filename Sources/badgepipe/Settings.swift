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
                throw CommandError(code: "invalid_setting", message: "\(variable) must be an integer, not \"\(text)\"")
            }
            number = parsed
        }
        guard range.contains(number) else {
            let bound = range.upperBound == .max ? "at least \(range.lowerBound)" : "within \(range)"
            throw CommandError(
                code: "invalid_setting", message: "\(name) (\(variable)) must be \(bound), not \(number)")
        }
        return number
    }
}

/// A command-line failure with a one-line message.
struct CommandError: Error, CustomStringConvertible {
    var code: String
    var message: String
    var description: String { message }
}
