import Foundation
import Logging

/// Every setting is a flag and an environment variable; the flag wins, then the variable, then the default.
enum Settings {
    static func value(_ flag: String?, _ variable: String, default fallback: String) -> String {
        if let flag { return flag }
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        return fallback
    }

    /// The value of an optional setting: the flag, else the variable when set and not empty, else nil.
    static func optional(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        return nil
    }

    static let defaultAMQPURL = "amqp://guest:guest@127.0.0.1:5672/%2F"

    static func amqpURL(_ flag: String?) -> String { value(flag, "BADGEPIPE_AMQP_URL", default: defaultAMQPURL) }

    /// A logger writing to stderr at the level from `--log-level` / `BADGEPIPE_LOG_LEVEL` (default info).
    static func logger(_ label: String, level flag: String?) -> Logger {
        let levelText = value(flag, "BADGEPIPE_LOG_LEVEL", default: "info")
        let level = Logger.Level(rawValue: levelText) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// A command-line failure with a one-line message.
struct CommandError: Error, CustomStringConvertible {
    var code: String
    var message: String
    var description: String { message }
}
