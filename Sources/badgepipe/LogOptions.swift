import ArgumentParser
import Logging

/// The level of the log a long-running command (`worker`, `sink serve`) writes to stderr.
struct LogOptions: ParsableArguments {
    @Option(name: WorkerSettings.logLevel.optionName, help: WorkerSettings.logLevel.help) var logLevel: String?

    /// Sets up logging to stderr at the level from `--log-level`, else `BADGEPIPE_LOG_LEVEL`, else info, and returns
    /// a logger labelled `label`; an unknown level is an error.
    func logger(_ label: String) throws -> Logger {
        let levelText = WorkerSettings.logLevel.value(logLevel)
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw CommandError(
                code: .invalidSetting,
                message: "--log-level (BADGEPIPE_LOG_LEVEL) must be trace, debug, info, notice, warning, error or "
                    + "critical, not \"\(levelText)\"")
        }
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
